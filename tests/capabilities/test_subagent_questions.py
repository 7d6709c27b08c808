"""A synchronous delegate's question (`allow_questions`) asked in the chat and answered by the requester."""

from __future__ import annotations

from typing import Any

from pydantic_ai import ModelMessage, ModelRequest
from pydantic_ai.messages import ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from sqlalchemy import select

from storage.db import Database
from storage.models import ApprovalRow, DelegateQuestionRow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import stepped_with_info

RESEARCHER = {"name": "researcher", "description": "Finds out where to deploy.", "instructions": "Find out.",
              "model": "function:child"}


def asking(*, expires_after: int | None = None) -> dict[str, Any]:
    return {"approvals": {"expires_after": expires_after}} if expires_after else {}


CAPABILITIES = [{"id": "subagents", "config": {"allow_questions": True, "inline": [RESEARCHER]}}]


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def parent() -> FunctionModel:
    """Delegates a prompt that says `deploy`; answers with the delegate's result, and echoes anything else."""
    def decide(messages: list[ModelMessage], _info: AgentInfo) -> Any:
        last = messages[-1]
        results = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
        if results:
            return f"done: {results[-1].content}"
        prompt = [p for p in last.parts if isinstance(p, UserPromptPart)][-1].content
        assert isinstance(prompt, str)
        if "deploy" in prompt:
            return "task", {"description": "where to deploy web", "subagent_type": "researcher"}, "task-1"
        return f"echo: {prompt}"
    return stepped_with_info(decide)


def child(offered: list[bool]) -> FunctionModel:
    """Asks the person which region, then answers with what it was told."""
    def decide(messages: list[ModelMessage], info: AgentInfo) -> Any:
        offered.append("ask_parent" in {tool.name for tool in info.function_tools})
        returns = _returns(messages)
        if not returns and offered[-1]:
            return "ask_parent", {"question": "Which region?"}, "ask-1"
        return f"answer: {returns[0].content if returns else '-'}"
    return stepped_with_info(decide)


def texts(telegram: FakeTelegram, chat_id: int) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat_id)]


def question(telegram: FakeTelegram, chat_id: int) -> dict[str, Any] | None:
    return next((m for m in telegram.bot_messages(chat_id) if " asks: " in m["text"]), None)


async def question_statuses(database_url: str) -> list[str]:
    """The statuses of the delegate questions asked; a question is never an approval row."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            approvals = (await session.execute(select(ApprovalRow.id))).scalars().all()
            rows = await session.execute(select(DelegateQuestionRow.status).order_by(DelegateQuestionRow.id))
            assert approvals == [], "a delegate's question parks no approval"
            return list(rows.scalars())
    finally:
        await db.close()


async def test_the_question_is_asked_in_the_chat_and_the_requesters_reply_resumes_the_delegate(
        telegram: FakeTelegram, database_url: str) -> None:
    offered: list[bool] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=parent(),
                               capabilities=CAPABILITIES, models={"function:child": child(offered)}):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: question(telegram, chat["id"]) is not None)
        asked = question(telegram, chat["id"])
        assert asked is not None and asked["text"].startswith("Alice, researcher asks: Which region?")
        await telegram.user_says(bot.token, chat, alice, "eu-west")
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"))
    assert texts(telegram, chat["id"])[-1].startswith("done: answer: eu-west")
    assert offered[0] is True
    assert await question_statuses(database_url) == ["answered"]


async def test_another_persons_message_is_a_turn_of_its_own_and_does_not_answer(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice, mallory = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Mallory")
    group = telegram.group(-4001, "Ops")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=parent(),
                               capabilities=CAPABILITIES, models={"function:child": child([])}):
        await telegram.user_says(bot.token, group, alice, "@helper_bot deploy web")
        await telegram.wait_for(lambda: question(telegram, group["id"]) is not None)
        asked = question(telegram, group["id"])
        assert asked is not None
        await telegram.user_says(bot.token, group, mallory, "@helper_bot eu-central", reply_to=asked)
        await telegram.wait_for(lambda: texts(telegram, group["id"])[-1].startswith("echo:"))
        assert "eu-central" in texts(telegram, group["id"])[-1]
        assert await question_statuses(sqlite_url) == ["pending"]
        await telegram.user_says(bot.token, group, alice, "eu-west", reply_to=asked)
        await telegram.wait_for(lambda: texts(telegram, group["id"])[-1].startswith("done:"))
    assert texts(telegram, group["id"])[-1].startswith("done: answer: eu-west")
    assert await question_statuses(sqlite_url) == ["answered"]


async def test_an_unanswered_question_expires_and_the_delegate_is_told(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot(binding=asking(expires_after=1)).register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=parent(),
                               capabilities=CAPABILITIES, models={"function:child": child([])}):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: question(telegram, chat["id"]) is not None)
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"), timeout=10)
        assert texts(telegram, chat["id"])[-1].startswith("done: answer: Nobody answered your question")
        await telegram.user_says(bot.token, chat, alice, "late news")  # no open question: a turn of its own
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("echo:"))
    assert await question_statuses(sqlite_url) == ["expired"]


async def test_a_reply_after_a_restart_still_resumes_the_run(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=parent(),
                               capabilities=CAPABILITIES, models={"function:child": child([])}):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: question(telegram, chat["id"]) is not None)
    await telegram.user_says(bot.token, chat, alice, "eu-west")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=parent(),
                               capabilities=CAPABILITIES, models={"function:child": child([])}):
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"))
    assert texts(telegram, chat["id"])[-1].startswith("done: answer: eu-west")


async def test_without_allow_questions_no_delegate_is_offered_ask_parent(telegram: FakeTelegram,
                                                                        sqlite_url: str) -> None:
    offered: list[bool] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=parent(),
                               capabilities=[{"id": "subagents", "config": {"inline": [RESEARCHER]}}],
                               models={"function:child": child(offered)}):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] and texts(telegram, chat["id"])[-1]
                                .startswith("done:"))
    assert offered == [False] and texts(telegram, chat["id"])[-1].startswith("done: answer: -")
    assert await question_statuses(sqlite_url) == []
