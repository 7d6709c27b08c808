"""Conversation search and mem0 memory in real chat turns: a gateway on the fake Telegram, a scripted model
calling the tools, and what the model received for each call."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest
from pydantic_ai.messages import ToolReturnPart

from capabilities.conversation_search import GROUP_REFUSAL
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.mem0 import FakeMem0, self_signed
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask, running_gateway
from tests.support.mattermost_harness import MattermostBot
from tests.support.mattermost_harness import running_gateway as mattermost_gateway
from tests.support.scripted import last_prompt, stepped
from tests.support.slack_harness import SlackBot
from tests.support.slack_harness import running_gateway as slack_gateway

KEY = "m0-sk-chat-secret-0815"


def tool_caller(received: list[str], tools: dict[str, tuple[str, dict[str, Any]]]) -> Any:
    """Calls `tools[word]` when the prompt contains `word`, then answers; records each tool's return."""
    def step(messages: list[ModelMessage]) -> Any:
        last = messages[-1]
        returned = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
        if returned:
            received.append(str(returned[-1].content))
            return "Here is what I found."
        prompt = last_prompt(messages)
        for word, (name, args) in tools.items():
            if word in prompt:
                return name, args, f"call-{len(received)}"
        return "Noted."
    return stepped(step)


async def test_a_person_finds_their_group_thread_from_a_dm_until_they_leave_the_group(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    group = telegram.group(-600, "Launch crew")
    telegram.add_member(group, bot.user)
    telegram.add_member(group, alice)
    received: list[str] = []
    model = tool_caller(received, {"find": ("search_conversations", {"query": "launch"})})
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               capabilities=[{"id": "conversation_search"}]):
        await ask(telegram, bot, group, alice, "the launch is on friday")
        dm = telegram.private_chat(alice)
        await ask(telegram, bot, dm, alice, "find what we said")
        assert "group thread of bot" in received[-1] and "**launch**" in received[-1]
        await ask(telegram, bot, group, alice, "find it here")
        assert received[-1] == GROUP_REFUSAL
        telegram.remove_member(group, alice)
        await ask(telegram, bot, dm, alice, "find what we said")
        assert received[-1].startswith("No earlier conversation matches 'launch'")


async def test_a_person_remembers_recalls_and_forgets_through_mem0(
        telegram: FakeTelegram, database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    cert, key = self_signed(tmp_path)
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    group = telegram.group(-601, "Tea room")
    telegram.add_member(group, bot.user)
    telegram.add_member(group, alice)
    received: list[str] = []
    model = tool_caller(received, {"note": ("remember", {"text": "Alice likes green tea."}),
                                   "drink": ("recall", {"query": "what does alice drink"})})
    async with FakeMem0(dialect="cloud", key=KEY, cert_file=cert, key_file=key) as mem0:
        entry = {"id": "memory_mem0", "secret_id": "MEM0_KEY", "tool_approval": {"remember": "never"},
                 "config": {"base_url": mem0.url, "dialect": "cloud"}}
        environment = {"GATEWAY_DEPLOYMENT": "acme", "MEM0_ALLOWED_HOSTS": "127.0.0.1",
                       "MEM0_CA_BUNDLE": str(cert)}
        async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                                   capabilities=[entry], environment=environment, secrets={"MEM0_KEY": KEY}):
            dm = telegram.private_chat(alice)
            await ask(telegram, bot, dm, alice, "note this")
            assert received[-1] == "remembered: Alice likes green tea."
            await ask(telegram, bot, dm, alice, "what do I drink?")
            assert received[-1] == "- Alice likes green tea."
            [personal] = list(mem0.memories)
            assert personal.startswith("acme:assistant:identity:")
            await ask(telegram, bot, group, alice, "note this for the room")
            assert set(mem0.memories) == {personal, f"acme:assistant:room:telegram:{bot.name}:-601"}
            asked = await ask(telegram, bot, dm, alice, "forget")
            assert "memory service (mem0)" in asked
            done = await ask(telegram, bot, dm, alice, "forget yes")
            assert done.startswith("Done:")
            deleted = [r.query["user_id"] for r in mem0.received if r.method == "DELETE"]
            assert personal in deleted and not any(":room:" in user_id for user_id in deleted)
            assert set(mem0.memories) == {f"acme:assistant:room:telegram:{bot.name}:-601"}
    assert KEY not in caplog.text


async def test_on_slack_a_channel_thread_is_found_from_a_dm_until_the_person_leaves_the_channel(
        slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    general = slack.add_channel("general", members=[alice, bot.app])
    dm = slack.open_dm(alice, bot.app)
    received: list[str] = []
    model = tool_caller(received, {"find": ("search_conversations", {"query": "launch"})})
    async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=model,
                             capabilities=[{"id": "conversation_search"}]):
        said = await slack.user_says(general, alice, f"{bot.mention} the launch is on friday")
        await slack.wait_for(lambda: slack.texts(general, by=bot.app, thread_ts=said["ts"]) == ["Noted."])
        await slack.user_says(dm, alice, "find what we said")
        await slack.wait_for(lambda: len(received) == 1)
        assert "group thread of bot" in received[0] and "on Slack" in received[0] and "**launch**" in received[0]
        slack.remove_member(general, alice)
        await slack.wait_for(lambda: len(slack.texts(dm, by=bot.app)) == 1)
        await slack.user_says(dm, alice, "find it again")
        await slack.wait_for(lambda: len(received) == 2)
        assert received[1].startswith("No earlier conversation matches 'launch'")


async def test_on_mattermost_a_channel_thread_is_found_from_a_dm_until_the_person_leaves_the_channel(
        mattermost: FakeMattermost, sqlite_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    team = mattermost.add_team("acme")
    channel = mattermost.add_channel(team, "town-square", members=[bot.user, alice])
    dm = mattermost.direct_channel(alice, bot.user)
    received: list[str] = []
    model = tool_caller(received, {"find": ("search_conversations", {"query": "launch"})})
    async with mattermost_gateway(mattermost, [bot], database_url=sqlite_url, model=model,
                                  capabilities=[{"id": "conversation_search"}]):
        await mattermost.user_posts(channel, alice, "@helper the launch is on friday")
        await mattermost.wait_for(lambda: [p["message"] for p in mattermost.posts(channel, user=bot.user)]
                                  == ["Noted."])
        await mattermost.user_posts(dm, alice, "find what we said")
        await mattermost.wait_for(lambda: len(received) == 1)
        assert "group thread of bot" in received[0] and "on Mattermost" in received[0]
        mattermost.remove_member(channel, alice)
        await mattermost.wait_for(lambda: len(mattermost.posts(dm, user=bot.user)) == 1)
        await mattermost.user_posts(dm, alice, "find it again")
        await mattermost.wait_for(lambda: len(received) == 2)
        assert received[1].startswith("No earlier conversation matches 'launch'")
