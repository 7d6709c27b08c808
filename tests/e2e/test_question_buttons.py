"""A delegate's question that offers options is shown with one button per option on Telegram, Slack and Mattermost:
a click by the person asked answers it once and the run goes on; anyone else's click is refused and changes
nothing; a typed answer (or, past a platform's buttons, a number from the list) still answers."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic_ai import ModelMessage, ModelRequest
from pydantic_ai.messages import ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from sqlalchemy import select

from storage.db import Database
from storage.models import DelegateQuestionRow
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot
from tests.support.harness import running_gateway as telegram_gateway
from tests.support.mattermost_harness import MattermostBot
from tests.support.mattermost_harness import running_gateway as mattermost_gateway
from tests.support.scripted import stepped_with_info
from tests.support.slack_harness import SlackBot
from tests.support.slack_harness import running_gateway as slack_gateway

REGIONS = ["eu-west", "us-east"]


def delegating() -> list[dict[str, Any]]:
    researcher = {"name": "researcher", "description": "Finds out where to deploy.", "instructions": "Find out.",
                  "model": "function:scripted"}
    return [{"id": "subagents", "config": {"allow_questions": True, "inline": [researcher]}}]


def scripted(choices: list[str], offered: list[dict[str, Any]] | None = None) -> FunctionModel:
    """One model for both: the parent (offered `task`) delegates `deploy` and answers with the result; the delegate
    asks which region with `choices` and answers with what it was told."""
    def decide(messages: list[ModelMessage], info: AgentInfo) -> Any:
        last = messages[-1]
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
        if "task" not in {tool.name for tool in info.function_tools}:
            if returns:
                return f"answer: {returns[0].content}"
            if offered is not None:
                offered.extend(t.parameters_json_schema for t in info.function_tools if t.name == "ask_parent")
            return "ask_parent", {"question": "Which region?", "choices": choices}, "ask-1"
        if returns:
            return f"done: {returns[-1].content}"
        prompt = [p for p in last.parts if isinstance(p, UserPromptPart)][-1].content
        assert isinstance(prompt, str)
        if "deploy" in prompt:
            return "task", {"description": "where to deploy web", "subagent_type": "researcher"}, "task-1"
        return f"echo: {prompt}"
    return stepped_with_info(decide)


async def question_rows(database_url: str) -> list[tuple[str, str | None, str | None]]:
    """(status, answer, answered by) of every question asked."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            rows = await session.execute(select(DelegateQuestionRow.status, DelegateQuestionRow.answer,
                                                DelegateQuestionRow.answered_by).order_by(DelegateQuestionRow.id))
            return [tuple(row) for row in rows]  # pyright: ignore[reportReturnType]
    finally:
        await db.close()


# -- Telegram -----------------------------------------------------------------------------------------------------

def keyboard(message: dict[str, Any]) -> list[tuple[str, str]]:
    return [(b["text"], b["callback_data"]) for row in (message.get("reply_markup") or {}).get("inline_keyboard", [])
            for b in row]


def telegram_question(telegram: FakeTelegram, chat: dict[str, Any]) -> dict[str, Any] | None:
    return next((m for m in telegram.bot_messages(chat["id"]) if " asks: " in m["text"]), None)


def telegram_texts(telegram: FakeTelegram, chat: dict[str, Any]) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat["id"])]


def callback_answers(telegram: FakeTelegram) -> list[dict[str, Any]]:
    return [c.params for c in telegram.calls if c.method == "answerCallbackQuery"]


async def test_telegram_a_click_by_the_person_asked_answers_once_and_the_run_goes_on(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice, mallory = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Mallory")
    group = telegram.group(-4001, "Ops")
    offered: list[dict[str, Any]] = []
    async with telegram_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                                model=scripted(REGIONS, offered), capabilities=delegating()):
        await telegram.user_says(bot.token, group, alice, "@helper_bot deploy web")
        await telegram.wait_for(lambda: telegram_question(telegram, group) is not None)
        asked = telegram_question(telegram, group)
        assert asked is not None and asked["text"].startswith("Alice, researcher asks: Which region?")
        buttons = keyboard(asked)
        assert [label for label, _data in buttons] == REGIONS
        await telegram.user_clicks(bot.token, asked, mallory, buttons[1][1])
        await telegram.wait_for(lambda: len(callback_answers(telegram)) == 1)
        refusal = callback_answers(telegram)[0]
        assert refusal["show_alert"] is True and "Only Alice" in refusal["text"]
        assert await question_rows(database_url) == [("pending", None, None)]
        assert keyboard(telegram_question(telegram, group) or {}) == buttons, "a refused click changes nothing"
        await telegram.user_clicks(bot.token, asked, alice, buttons[1][1])
        await telegram.wait_for(lambda: telegram_texts(telegram, group)[-1].startswith("done:"))
        await telegram.user_clicks(bot.token, asked, alice, buttons[0][1])  # a second click, on the stale keyboard
        await telegram.wait_for(lambda: len(callback_answers(telegram)) == 3)
    assert telegram_texts(telegram, group)[-1] == "done: answer: us-east"
    assert sum(text.startswith("done:") for text in telegram_texts(telegram, group)) == 1
    late = callback_answers(telegram)[2]
    assert late["show_alert"] is True and late["text"] == "Answered by Alice: us-east"
    closed = telegram_question(telegram, group)
    assert closed is not None and keyboard(closed) == [] and closed["text"].endswith("Answered by Alice: us-east")
    assert await question_rows(database_url) == [("answered", "us-east", "Alice")]
    [schema] = offered
    assert schema["properties"]["choices"]["type"] == "array", "the delegate is offered `choices` as data"


async def test_telegram_a_forged_option_is_refused_and_a_typed_answer_still_answers(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=scripted(REGIONS),
                                capabilities=delegating()):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: telegram_question(telegram, chat) is not None)
        asked = telegram_question(telegram, chat)
        assert asked is not None
        data = keyboard(asked)[0][1]
        await telegram.user_clicks(bot.token, asked, alice, data.rsplit(":", 1)[0] + ":7")  # no seventh option
        await telegram.wait_for(lambda: len(callback_answers(telegram)) == 1)
        assert callback_answers(telegram)[0]["show_alert"] is True
        assert await question_rows(sqlite_url) == [("pending", None, None)]
        await telegram.user_says(bot.token, chat, alice, "ap-south, please")
        await telegram.wait_for(lambda: telegram_texts(telegram, chat)[-1].startswith("done:"))
    assert telegram_texts(telegram, chat)[-1] == "done: answer: ap-south, please"
    closed = telegram_question(telegram, chat)
    assert closed is not None and keyboard(closed) == []
    assert await question_rows(sqlite_url) == [("answered", "ap-south, please", "Alice")]


async def test_telegram_more_options_than_buttons_are_listed_and_a_number_picks_one(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    many = [f"region-{n}" for n in range(1, 13)]
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=scripted(many),
                                capabilities=delegating()):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: telegram_question(telegram, chat) is not None)
        asked = telegram_question(telegram, chat)
        assert asked is not None and keyboard(asked) == []
        assert "\n1. region-1\n" in asked["text"] and "\n12. region-12\n" in asked["text"]
        await telegram.user_says(bot.token, chat, alice, "11")
        await telegram.wait_for(lambda: telegram_texts(telegram, chat)[-1].startswith("done:"))
    assert telegram_texts(telegram, chat)[-1] == "done: answer: region-11"


# -- Slack --------------------------------------------------------------------------------------------------------

def slack_buttons(message: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["text"]["text"], e["action_id"]) for block in message.get("blocks") or []
            for e in block.get("elements") or [] if e.get("type") == "button"]


async def test_slack_a_click_by_the_person_asked_answers_once_and_the_run_goes_on(
        slack: FakeSlack, sqlite_url: str) -> None:
    alice, mallory = slack.add_user("alice", real_name="Alice"), slack.add_user("mallory", real_name="Mallory")
    bot = SlackBot(app=slack.add_app("helper"))
    ops = slack.add_channel("ops", members=[alice, mallory, bot.app])

    def question(thread: str) -> dict[str, Any] | None:
        return next((m for m in slack.messages(ops, thread_ts=thread)
                     if m.get("user") == bot.user_id and " asks: " in m["text"]), None)

    async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=scripted(REGIONS),
                             capabilities=delegating()):
        said = await slack.user_says(ops, alice, f"{bot.mention} deploy web")
        await slack.wait_for(lambda: question(said["ts"]) is not None)
        asked = question(said["ts"])
        assert asked is not None and [label for label, _id in slack_buttons(asked)] == REGIONS
        await slack.user_clicks(bot.app, asked, mallory, slack_buttons(asked)[0][1])
        await slack.wait_for(lambda: len(slack.ephemeral) == 1)
        assert slack.ephemeral[0]["user"] == mallory["id"] and "Only Alice" in slack.ephemeral[0]["text"]
        assert await question_rows(sqlite_url) == [("pending", None, None)]
        await slack.user_clicks(bot.app, asked, alice, slack_buttons(asked)[0][1])
        await slack.wait_for(lambda: slack.texts(ops, by=bot.app, thread_ts=said["ts"])[-1].startswith("done:"))
        replies = slack.texts(ops, by=bot.app, thread_ts=said["ts"])
        assert replies[-1] == "done: answer: eu-west"
        closed = question(said["ts"])
        assert closed is not None and slack_buttons(closed) == []
    assert await question_rows(sqlite_url) == [("answered", "eu-west", "Alice")]


# -- Mattermost ---------------------------------------------------------------------------------------------------

def mattermost_buttons(post: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["name"], a["id"]) for attachment in post["props"].get("attachments", [])
            for a in attachment.get("actions", [])]


async def test_mattermost_a_click_by_the_person_asked_answers_once_and_the_run_goes_on(
        mattermost: FakeMattermost, database_url: str) -> None:
    alice, mallory = mattermost.add_user("alice"), mattermost.add_user("mallory")
    bot = MattermostBot().register(mattermost)
    room = mattermost.add_channel(mattermost.add_team("acme"), "ops", members=[bot.user, alice, mallory])

    def question() -> dict[str, Any] | None:
        return next((p for p in mattermost.posts(room, user=bot.user) if " asks: " in p["message"]), None)

    def last_said() -> str:
        return str(mattermost.posts(room, user=bot.user)[-1]["message"])

    async with mattermost_gateway(mattermost, [bot], database_url=database_url, public=True, model=scripted(REGIONS),
                                  capabilities=delegating()):
        await mattermost.user_posts(room, alice, f"@{bot.username} deploy web")
        await mattermost.wait_for(lambda: question() is not None)
        asked = question()
        assert asked is not None and [label for label, _id in mattermost_buttons(asked)] == REGIONS
        forged = {**mattermost_buttons_context(asked, 0), "choice": 1}  # signed for option 0, claims option 1
        status, _body = await mattermost.click(asked, alice, "choice0", context=forged)
        assert status != 200
        await mattermost.click(asked, mallory, "choice1")
        await mattermost.wait_for(lambda: any(user == mallory["id"] for user, _post in mattermost.ephemeral))
        assert await question_rows(database_url) == [("pending", None, None)]
        await asyncio.gather(mattermost.click(asked, alice, "choice1"), mattermost.click(asked, alice, "choice0"))
        await mattermost.wait_for(lambda: last_said().startswith("done:"))
        closed = question()
        assert closed is not None and mattermost_buttons(closed) == []
    [(status, answer, by)] = await question_rows(database_url)
    assert status == "answered" and answer in REGIONS and by is not None
    assert last_said() == f"done: answer: {answer}"
    assert sum(str(p["message"]).startswith("done:") for p in mattermost.posts(room, user=bot.user)) == 1


def mattermost_buttons_context(post: dict[str, Any], index: int) -> dict[str, Any]:
    [action] = [a for attachment in post["props"]["attachments"] for a in attachment["actions"]
                if a["id"] == f"choice{index}"]
    return dict(action["integration"]["context"])
