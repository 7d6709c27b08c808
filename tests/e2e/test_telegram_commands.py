"""The chat commands on Telegram, in a DM and addressed in a group: answered by the gateway, without a model run."""

from __future__ import annotations

import asyncio

from pydantic_ai import ModelMessage
from pydantic_ai.models.function import AgentInfo
from sqlalchemy import func, select

from storage.db import Database
from storage.models import MessageRow, RunRow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask, running_gateway, said_by
from tests.support.records import until_done
from tests.support.scripted import scripted, user_prompts, waits_for


def remembers(seen: list[list[str]]) -> object:
    def reply(messages: list[ModelMessage], _info: AgentInfo) -> str:
        seen.append(user_prompts(messages))
        return f"answer {len(seen)}"
    return scripted(reply)


async def count_runs(database_url: str) -> int:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return int((await session.execute(select(func.count(RunRow.id)))).scalar_one())
    finally:
        await db.close()


async def test_help_lists_the_commands_and_what_the_agent_can_do_without_a_model_run(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada")
    chat = telegram.private_chat(ada)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=remembers([]),
                               capabilities=[{"id": "clock"}]):
        plain = await ask(telegram, bot, chat, ada, "help")
        slashed = await ask(telegram, bot, chat, ada, "/help")
    assert plain == slashed
    assert "new" in plain and "retry" in plain and "status" in plain and "link" in plain
    assert "Date and time: Puts the current date and time" in plain, plain
    assert await count_runs(sqlite_url) == 0


async def test_after_new_the_next_model_request_carries_no_earlier_turn(telegram: FakeTelegram,
                                                                       database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada")
    chat = telegram.private_chat(ada)
    seen: list[list[str]] = []
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=remembers(seen)):
        await ask(telegram, bot, chat, ada, "my name is Ada")
        started = await ask(telegram, bot, chat, ada, "/new")
        await ask(telegram, bot, chat, ada, "what is my name?")
    assert started.startswith("Started afresh")
    assert seen == [["my name is Ada"], ["what is my name?"]]
    db = Database(database_url)
    try:
        async with db.session() as session:
            kept = (await session.execute(select(MessageRow.text).order_by(MessageRow.id))).scalars().all()
    finally:
        await db.close()
    assert kept == ["my name is Ada", "answer 1", "what is my name?", "answer 2"], "earlier turns stay stored"


async def test_new_in_a_group_addressed_starts_the_group_afresh(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada")
    group = telegram.group(-500, "Team")
    seen: list[list[str]] = []
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=remembers(seen)):
        await ask(telegram, bot, group, ada, "the plan is A")
        await telegram.user_says(bot.token, group, ada, "/new@helper_bot")
        await telegram.wait_for(lambda: said_by(telegram, group, bot)[-1].startswith("Started afresh"))
        await ask(telegram, bot, group, ada, "what is the plan?")
    assert seen[-1] == ["[Ada] what is the plan?"]


async def test_retry_answers_the_last_turn_again_in_place_of_the_earlier_answer(telegram: FakeTelegram,
                                                                                database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada")
    chat = telegram.private_chat(ada)
    seen: list[list[str]] = []
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=remembers(seen)):
        await ask(telegram, bot, chat, ada, "first question")
        await ask(telegram, bot, chat, ada, "second question")
        await telegram.user_says(bot.token, chat, ada, "retry")
        await telegram.wait_for(lambda: said_by(telegram, chat, bot) == ["answer 1", "answer 3"])
        await ask(telegram, bot, chat, ada, "third question")
    assert seen[2] == ["first question", "second question"], "the retried turn reads the history before it"
    assert seen[3] == ["first question", "second question", "third question"]
    db = Database(database_url)
    try:
        async with db.session() as session:
            answers = (await session.execute(select(MessageRow.text).where(MessageRow.role == "assistant")
                                             .order_by(MessageRow.id))).scalars().all()
    finally:
        await db.close()
    assert answers == ["answer 1", "answer 3", "answer 4"], "the earlier answer left the history"


async def test_status_says_agent_model_context_and_whether_a_turn_runs(telegram: FakeTelegram,
                                                                      database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada")
    group = telegram.group(-501, "Team")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=remembers([])):
        await ask(telegram, bot, group, ada, "hello")
        await until_done(database_url, 1)  # the answer shows before its turn is committed, and status says so
        status = await ask(telegram, bot, group, ada, "status")
    assert "assistant" in status and "function:scripted" in status
    assert "2 earlier message(s)" in status and "estimated" in status
    assert "no turn is running" in status


async def test_help_and_status_are_answered_while_a_slow_turn_runs(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada")
    chat = telegram.private_chat(ada)
    gate, started = asyncio.Event(), asyncio.Event()
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=waits_for(gate, "done", started=started)):
        await telegram.user_says(bot.token, chat, ada, "think hard")
        await started.wait()
        await telegram.user_says(bot.token, chat, ada, "status")
        await telegram.wait_for(lambda: any("a turn is running" in text for text in said_by(telegram, chat, bot)))
        assert not gate.is_set()
        gate.set()
        # A private chat's answer is sent once it is done (drafts meanwhile), so after the status.
        await telegram.wait_for(lambda: said_by(telegram, chat, bot)[-1:] == ["thinking done"])


async def test_the_command_menus_are_set_at_start(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=remembers([])):
        await telegram.wait_for(lambda: bool(telegram.my_commands(bot.token, "all_group_chats")))
    private = [c["command"] for c in telegram.my_commands(bot.token, "all_private_chats")]
    group = [c["command"] for c in telegram.my_commands(bot.token, "all_group_chats")]
    assert {"new", "retry", "help", "status", "link", "unlink", "forget"} <= set(private)
    assert {"new", "retry", "help", "status"} <= set(group) and "link" not in group
