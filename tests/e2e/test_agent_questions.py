"""The agent itself asks the person to choose (`ask_person`): the options are buttons on Telegram, Slack and
Mattermost, a click by the person asked answers once and the run goes on with the answer as the tool's result;
anyone else's click changes nothing; a typed or spoken answer (a voice note, transcribed) answers too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from pydantic_ai import ModelMessage, ModelRequest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.e2e.test_question_buttons import (
    callback_answers,
    keyboard,
    mattermost_buttons,
    question_rows,
    slack_buttons,
)
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.fakes.transcriptions import FakeTranscriptions
from tests.support.harness import TelegramBot
from tests.support.harness import running_gateway as telegram_gateway
from tests.support.mattermost_harness import MattermostBot
from tests.support.mattermost_harness import running_gateway as mattermost_gateway
from tests.support.scripted import stepped_with_info
from tests.support.slack_harness import SlackBot
from tests.support.slack_harness import running_gateway as slack_gateway

REGIONS = ["eu-west", "us-east"]
ASKS = [{"id": "ask_person"}]
QUESTION = "Which region should I deploy to?"
OGG = b"OggS\x00\x02" + b"\x01" * 200


def asking(choices: list[str], offered: list[str] | None = None) -> FunctionModel:
    """Asks which region with `choices`, then answers with what the tool returned."""
    def decide(messages: list[ModelMessage], info: AgentInfo) -> Any:
        if offered is not None:
            offered.extend(tool.name for tool in info.function_tools)
        last = messages[-1]
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
        if returns:
            return f"done: {returns[0].content}"
        return "ask_person", {"question": QUESTION, "choices": choices}, "ask-1"
    return stepped_with_info(decide)


def telegram_question(telegram: FakeTelegram, chat: dict[str, Any]) -> dict[str, Any] | None:
    return next((m for m in telegram.bot_messages(chat["id"]) if QUESTION in m["text"]), None)


def telegram_texts(telegram: FakeTelegram, chat: dict[str, Any]) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat["id"])]


async def test_telegram_the_agent_asks_with_buttons_and_the_click_of_the_person_asked_answers(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice, mallory = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Mallory")
    group = telegram.group(-4001, "Ops")
    offered: list[str] = []
    async with telegram_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                                model=asking(REGIONS, offered), capabilities=ASKS):
        await telegram.user_says(bot.token, group, alice, "@helper_bot deploy web")
        await telegram.wait_for(lambda: telegram_question(telegram, group) is not None)
        asked = telegram_question(telegram, group)
        assert asked is not None and asked["text"].startswith(f"Alice, {QUESTION}")
        buttons = keyboard(asked)
        assert [label for label, _data in buttons] == REGIONS
        await telegram.user_clicks(bot.token, asked, mallory, buttons[1][1])
        await telegram.wait_for(lambda: len(callback_answers(telegram)) == 1)
        assert "Only Alice" in callback_answers(telegram)[0]["text"]
        assert await question_rows(database_url) == [("pending", None, None)]
        await telegram.user_clicks(bot.token, asked, alice, buttons[1][1])
        await telegram.wait_for(lambda: telegram_texts(telegram, group)[-1].startswith("done:"))
    assert telegram_texts(telegram, group)[-1] == "done: The person answered: us-east"
    assert await question_rows(database_url) == [("answered", "us-east", "Alice")]
    closed = telegram_question(telegram, group)
    assert closed is not None and keyboard(closed) == []
    assert "ask_person" in offered


@pytest_asyncio.fixture
async def transcriptions() -> AsyncIterator[FakeTranscriptions]:
    async with FakeTranscriptions({OGG: "the one in Europe"}) as server:
        yield server


async def test_telegram_a_voice_note_answers_the_agents_question_as_its_transcript(
        telegram: FakeTelegram, sqlite_url: str, transcriptions: FakeTranscriptions) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=asking(REGIONS),
                                capabilities=ASKS, top={"models": {"function:scripted": transcriptions.profile()}}):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: telegram_question(telegram, chat) is not None)
        await telegram.user_sends_voice(bot.token, chat, alice, OGG, duration=3)
        await telegram.wait_for(lambda: telegram_texts(telegram, chat)[-1].startswith("done:"))
    assert telegram_texts(telegram, chat)[-1] == "done: The person answered: 🎤 the one in Europe"
    assert await question_rows(sqlite_url) == [("answered", "🎤 the one in Europe", "Alice")]


async def test_slack_the_agent_asks_with_buttons_and_a_click_answers(slack: FakeSlack, sqlite_url: str) -> None:
    alice = slack.add_user("alice", real_name="Alice")
    bot = SlackBot(app=slack.add_app("helper"))
    ops = slack.add_channel("ops", members=[alice, bot.app])

    def question(thread: str) -> dict[str, Any] | None:
        return next((m for m in slack.messages(ops, thread_ts=thread)
                     if m.get("user") == bot.user_id and QUESTION in m["text"]), None)

    async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=asking(REGIONS),
                             capabilities=ASKS):
        said = await slack.user_says(ops, alice, f"{bot.mention} deploy web")
        await slack.wait_for(lambda: question(said["ts"]) is not None)
        asked = question(said["ts"])
        assert asked is not None and [label for label, _id in slack_buttons(asked)] == REGIONS
        await slack.user_clicks(bot.app, asked, alice, slack_buttons(asked)[0][1])
        await slack.wait_for(lambda: slack.texts(ops, by=bot.app, thread_ts=said["ts"])[-1].startswith("done:"))
        assert slack.texts(ops, by=bot.app, thread_ts=said["ts"])[-1] == "done: The person answered: eu-west"
    assert await question_rows(sqlite_url) == [("answered", "eu-west", "Alice")]


async def test_mattermost_the_agent_asks_with_buttons_and_a_click_answers(
        mattermost: FakeMattermost, database_url: str) -> None:
    alice = mattermost.add_user("alice")
    bot = MattermostBot().register(mattermost)
    room = mattermost.add_channel(mattermost.add_team("acme"), "ops", members=[bot.user, alice])

    def question() -> dict[str, Any] | None:
        return next((p for p in mattermost.posts(room, user=bot.user) if QUESTION in p["message"]), None)

    def last_said() -> str:
        return str(mattermost.posts(room, user=bot.user)[-1]["message"])

    async with mattermost_gateway(mattermost, [bot], database_url=database_url, public=True, model=asking(REGIONS),
                                  capabilities=ASKS):
        await mattermost.user_posts(room, alice, f"@{bot.username} deploy web")
        await mattermost.wait_for(lambda: question() is not None)
        asked = question()
        assert asked is not None and [label for label, _id in mattermost_buttons(asked)] == REGIONS
        await mattermost.click(asked, alice, "choice1")
        await mattermost.wait_for(lambda: last_said().startswith("done:"))
    assert last_said() == "done: The person answered: us-east"
    assert await question_rows(database_url) == [("answered", "us-east", "alice")]
