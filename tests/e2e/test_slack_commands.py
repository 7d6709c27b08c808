"""The chat commands on Slack: typed as words, or as slash commands over Socket Mode and the Events API, in a DM
and in a channel; the manifest lists them."""

from __future__ import annotations

import asyncio
from typing import Any

import yaml
from pydantic_ai import ModelMessage
from pydantic_ai.models.function import AgentInfo

from adapters.slack.manifest import build_slack_manifest
from gateway.pipeline.steps.commands import COMMANDS, menu
from tests.support.fakes.slack import FakeSlack
from tests.support.scripted import scripted, user_prompts, waits_for
from tests.support.slack_harness import SlackBot, running_gateway


def remembers(seen: list[list[str]]) -> Any:
    def reply(messages: list[ModelMessage], _info: AgentInfo) -> str:
        seen.append(user_prompts(messages))
        return f"answer {len(seen)}"
    return scripted(reply)


async def said_next(slack: FakeSlack, bot: SlackBot, channel: dict[str, Any], count: int,
                    thread_ts: str | None = None) -> str:
    """The bot's message number `count` (from 1) in the channel or thread, once it is more than a placeholder."""
    def texts() -> list[str]:
        return [t for t in slack.texts(channel, by=bot.app, thread_ts=thread_ts) if not t.endswith("…")]
    await slack.wait_for(lambda: len(texts()) >= count)
    return texts()[count - 1]


async def test_help_as_a_word_and_as_slash_commands_over_socket_mode_in_a_dm(slack: FakeSlack,
                                                                            sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=remembers([])):
        await slack.user_says(dm, alice, "help")
        word = await said_next(slack, bot, dm, 1)
        await slack.user_runs_command(bot.app, dm, alice, "/help")
        slashed = await said_next(slack, bot, dm, 2)
        await slack.user_runs_command(bot.app, dm, alice, "/agent-status")
        status = await said_next(slack, bot, dm, 3)
    assert word == slashed and "`retry`" in word
    assert "Agent:* assistant" in status or "Agent: assistant" in status.replace("*", ""), status


async def test_slash_commands_over_the_events_api_are_acknowledged_empty_and_answered(slack: FakeSlack,
                                                                                     sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"), transport="http")
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    seen: list[list[str]] = []
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=remembers(seen)):
        await slack.user_says(dm, alice, "remember 42")
        await said_next(slack, bot, dm, 1)
        await slack.user_runs_command(bot.app, dm, alice, "/new")
        started = await said_next(slack, bot, dm, 2)
        await slack.user_says(dm, alice, "what did I say?")
        await said_next(slack, bot, dm, 3)
    assert started.startswith("Started afresh")
    assert [(d.status, d.body) for d in bot.app.http if d.event_id is None] == [(200, "")]
    assert seen[-1] == ["what did I say?"]


async def test_after_new_in_a_dm_the_next_request_carries_no_earlier_turn(slack: FakeSlack,
                                                                         database_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    seen: list[list[str]] = []
    async with running_gateway(slack, [bot], database_url=database_url, redis_url=None, model=remembers(seen)):
        await slack.user_says(dm, alice, "my name is Alice")
        await said_next(slack, bot, dm, 1)
        await slack.user_says(dm, alice, "/new")
        await said_next(slack, bot, dm, 2)
        await slack.user_says(dm, alice, "what is my name?")
        await said_next(slack, bot, dm, 3)
    assert seen == [["my name is Alice"], ["what is my name?"]]


async def test_in_a_channel_commands_answer_when_named_and_a_thread_says_how_to_start_anew(
        slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    general = slack.add_channel("general", members=[alice, bot.app])
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=remembers([])):
        asked = await slack.user_says(general, alice, f"{bot.mention} help")
        helped = await said_next(slack, bot, general, 1, thread_ts=asked["ts"])
        root = await slack.user_says(general, alice, f"{bot.mention} hello")
        await said_next(slack, bot, general, 1, thread_ts=root["ts"])
        await slack.user_says(general, alice, f"{bot.mention} new", thread_ts=root["ts"])
        in_thread = await said_next(slack, bot, general, 2, thread_ts=root["ts"])
        await slack.user_runs_command(bot.app, general, alice, "/new")
        await slack.wait_for(lambda: bool(slack.texts(general, by=bot.app)))
    assert "`status`" in helped
    assert in_thread.startswith("This thread is its own conversation")
    assert slack.texts(general, by=bot.app)[0].startswith("Here every message that names me")


async def test_retry_edits_the_earlier_answer_in_a_dm(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    seen: list[list[str]] = []
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=remembers(seen)):
        await slack.user_says(dm, alice, "a question")
        await said_next(slack, bot, dm, 1)
        await slack.user_says(dm, alice, "retry")
        await slack.wait_for(lambda: slack.texts(dm, by=bot.app) == ["answer 2"])
    assert seen == [["a question"], ["a question"]]


def test_the_manifest_lists_the_commands_as_slash_commands_with_slacks_own_words_prefixed() -> None:
    for transport in ("socket", "http"):
        manifest = yaml.safe_load(yaml.safe_dump(build_slack_manifest(
            name="team", transport=transport, public_url="https://gw.example.org", description="d", commands=menu())))
        listed = {entry["command"]: entry for entry in manifest["features"]["slash_commands"]}
        assert set(listed) == {f"/{c.name}" if c.name != "status" else "/agent-status" for c in COMMANDS}
        assert "commands" in manifest["oauth_config"]["scopes"]["bot"]
        if transport == "http":
            assert listed["/new"]["url"] == "https://gw.example.org/slack/team/commands"
        else:
            assert "url" not in listed["/new"]


async def test_status_is_answered_while_a_slow_turn_runs_in_the_same_dm(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    gate, started = asyncio.Event(), asyncio.Event()
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None,
                               model=waits_for(gate, "done", started=started)):
        await slack.user_says(dm, alice, "think hard")
        await started.wait()
        await slack.user_runs_command(bot.app, dm, alice, "/agent-status")
        await slack.wait_for(lambda: any("a turn is running" in t for t in slack.texts(dm, by=bot.app)))
        assert not gate.is_set()
        gate.set()
        await slack.wait_for(lambda: "thinking done" in slack.texts(dm, by=bot.app))
