"""The chat commands on Mattermost: plain words in a DM and naming the bot in a channel, and the custom slash
commands the gateway creates where the bot may (the client refuses an unknown `/` word, so the words must work)."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from pydantic_ai import ModelMessage
from pydantic_ai.models.function import AgentInfo

from tests.support.fakes.mattermost import FakeMattermost
from tests.support.mattermost_harness import MattermostBot, running_gateway
from tests.support.scripted import scripted, user_prompts


def remembers(seen: list[list[str]]) -> Any:
    def reply(messages: list[ModelMessage], _info: AgentInfo) -> str:
        seen.append(user_prompts(messages))
        return f"answer {len(seen)}"
    return scripted(reply)


def said(mattermost: FakeMattermost, bot: MattermostBot, channel: dict[str, Any], *,
         thread: str | None = None) -> list[str]:
    return [p["message"] for p in mattermost.posts(channel, user=bot.user, thread=thread)
            if not p["message"].endswith("…")]


async def test_after_new_in_a_dm_the_next_request_carries_no_earlier_turn(mattermost: FakeMattermost,
                                                                         database_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    dm = mattermost.direct_channel(alice, bot.user)
    seen: list[list[str]] = []
    async with running_gateway(mattermost, [bot], database_url=database_url, model=remembers(seen)):
        await mattermost.user_posts(dm, alice, "my name is Alice")
        await mattermost.wait_for(lambda: said(mattermost, bot, dm) == ["answer 1"])
        await mattermost.user_posts(dm, alice, "new")
        await mattermost.wait_for(lambda: len(said(mattermost, bot, dm)) == 2)
        await mattermost.user_posts(dm, alice, "what is my name?")
        await mattermost.wait_for(lambda: len(said(mattermost, bot, dm)) == 3)
    assert said(mattermost, bot, dm)[1].startswith("Started afresh")
    assert seen == [["my name is Alice"], ["what is my name?"]]


async def test_named_in_a_channel_help_and_status_answer_in_the_thread(mattermost: FakeMattermost,
                                                                      sqlite_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    team = mattermost.add_team("acme")
    channel = mattermost.add_channel(team, "town-square", members=[bot.user, alice])
    async with running_gateway(mattermost, [bot], database_url=sqlite_url, model=remembers([])):
        asked = await mattermost.user_posts(channel, alice, "@helper help")
        await mattermost.wait_for(lambda: bool(said(mattermost, bot, channel, thread=asked["id"])))
        status = await mattermost.user_posts(channel, alice, "@helper status")
        await mattermost.wait_for(lambda: bool(said(mattermost, bot, channel, thread=status["id"])))
        await mattermost.user_posts(channel, alice, "@helper new", root_id=status["id"])
        await mattermost.wait_for(lambda: len(said(mattermost, bot, channel, thread=status["id"])) == 2)
    assert "`retry`" in said(mattermost, bot, channel, thread=asked["id"])[0]
    assert "Agent:** assistant" in said(mattermost, bot, channel, thread=status["id"])[0]
    assert said(mattermost, bot, channel, thread=status["id"])[1].startswith("This thread is its own conversation")


async def test_slash_commands_are_created_at_start_and_answered(mattermost: FakeMattermost, sqlite_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    team = mattermost.add_team("acme", members=[bot.user, alice])
    channel = mattermost.add_channel(team, "town-square", members=[bot.user, alice])
    dm = mattermost.direct_channel(alice, bot.user)
    async with running_gateway(mattermost, [bot], database_url=sqlite_url, model=remembers([]), public=True):
        await mattermost.wait_for(lambda: len(mattermost.commands) >= 7)
        triggers = {command["trigger"] for command in mattermost.commands}
        ran = await mattermost.user_runs_command(dm, alice, "/agent-help", team=team)
        await mattermost.wait_for(lambda: len(said(mattermost, bot, dm)) == 1)
        await mattermost.user_runs_command(channel, alice, "/new")
        await mattermost.wait_for(lambda: len(said(mattermost, bot, channel)) == 1)
    assert {"new", "retry", "agent-help", "agent-status", "link", "unlink", "forget"} <= triggers
    assert ran == (200, "")
    assert "`status`" in said(mattermost, bot, dm)[0]
    assert said(mattermost, bot, channel)[0].startswith("Here every message that names me")


async def test_refused_slash_commands_are_logged_and_the_words_still_work(
        mattermost: FakeMattermost, sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    team = mattermost.add_team("acme", members=[bot.user, alice])
    dm = mattermost.direct_channel(alice, bot.user)
    mattermost.refuse_slash_commands()
    with caplog.at_level(logging.WARNING):
        async with running_gateway(mattermost, [bot], database_url=sqlite_url, model=remembers([]), public=True):
            refused = await mattermost.user_runs_command(dm, alice, "/new", team=team)
            await mattermost.user_posts(dm, alice, "help")
            await mattermost.wait_for(lambda: len(said(mattermost, bot, dm)) == 1)
    assert refused[0] == 404 and mattermost.commands == []
    assert "`new`" in said(mattermost, bot, dm)[0]
    warned = [r for r in caplog.records if "could not be registered" in r.getMessage()]
    assert len(warned) == 1, warned


async def test_a_slash_command_call_without_its_token_is_refused_and_nothing_is_answered(
        mattermost: FakeMattermost, sqlite_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    team = mattermost.add_team("acme", members=[bot.user, alice])
    dm = mattermost.direct_channel(alice, bot.user)
    async with running_gateway(mattermost, [bot], database_url=sqlite_url, model=remembers([]), public=True) as gateway:
        await mattermost.wait_for(lambda: len(mattermost.commands) >= 7)
        [new] = [command for command in mattermost.commands if command["trigger"] == "new"]
        fields = {"channel_id": dm["id"], "command": "/new", "team_id": team["id"], "text": "",
                  "trigger_id": "forged", "user_id": alice["id"], "user_name": "alice"}
        async with httpx.AsyncClient() as client:
            forged = await client.post(new["url"], data=fields, headers={"Authorization": "Token not-the-token"})
            missing = await client.post(f"{gateway.url}/mattermost/{bot.name}/commands", data=fields)
        ran = await mattermost.user_runs_command(dm, alice, "/agent-help", team=team)
        await mattermost.wait_for(lambda: len(said(mattermost, bot, dm)) == 1)
    assert (forged.status_code, missing.status_code, ran[0]) == (403, 403, 200)
    assert "`new`" in said(mattermost, bot, dm)[0], "only the signed call was answered"


async def test_retry_in_a_dm_edits_the_earlier_answer(mattermost: FakeMattermost, sqlite_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    dm = mattermost.direct_channel(alice, bot.user)
    seen: list[list[str]] = []
    async with running_gateway(mattermost, [bot], database_url=sqlite_url, model=remembers(seen)):
        await mattermost.user_posts(dm, alice, "a question")
        await mattermost.wait_for(lambda: said(mattermost, bot, dm) == ["answer 1"])
        await mattermost.user_posts(dm, alice, "retry")
        await mattermost.wait_for(lambda: said(mattermost, bot, dm) == ["answer 2"])
    assert seen == [["a question"], ["a question"]]
