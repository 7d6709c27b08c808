"""A turn costs the database the same work in a conversation of thousands of stored turns as in one of a few.

Measured as SQLite virtual-machine steps (its progress handler), the work a statement does, not time: a lookup
that reads a conversation's whole history grows with it, one that goes through an index does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import event, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.util import await_only

from storage.db import Database
from storage.models import ConversationRow, MessageRow, utcnow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import QUIET, TelegramBot, ask, running_gateway
from tests.support.records import until_done
from tests.support.scripted import echoes

FEW, MANY = 60, 3000
"""Stored turns in the two conversations: both more than the history window (50), so both read a full window."""
TURNS = 6
STEP = 10
"""VM instructions between two calls of the progress handler."""


class Steps:
    def __init__(self) -> None:
        self.counting = False
        self.count = 0

    def tick(self) -> int:
        if self.counting:
            self.count += 1
        return 0  # go on


@contextmanager
def counting_steps() -> Iterator[Steps]:
    """Every SQLite connection opened meanwhile reports its VM steps to the returned counter."""
    steps = Steps()

    def connected(_dbapi_connection: Any, record: Any) -> None:
        handled = record.driver_connection.set_progress_handler(steps.tick, STEP)
        if handled is not None:  # aiosqlite's connection (`transaction()`); sqlite3's (`run()`) returns None
            await_only(handled)

    event.listen(Engine, "connect", connected)
    try:
        yield steps
    finally:
        event.remove(Engine, "connect", connected)


async def store_turns(database_url: str, chat_id: int, count: int) -> None:
    db = Database(database_url)
    try:
        async with db.session() as session:
            conversation_id = (await session.execute(select(ConversationRow.id).where(
                ConversationRow.channel_id == str(chat_id)))).scalar_one()
            await session.execute(insert(MessageRow), [
                {"conversation_id": conversation_id, "role": "user" if n % 2 == 0 else "assistant",
                 "speaker_name": "Old", "text": f"stored turn {n}", "platform_message_id": str(10_000_000 + n),
                 "created_at": utcnow() - timedelta(days=1)} for n in range(count)])
    finally:
        await db.close()


async def test_a_turn_in_a_long_conversation_costs_what_one_in_a_short_one_does(telegram: FakeTelegram,
                                                                                 sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    short_user, long_user = telegram.add_user(101, "Ada", username="ada"), telegram.add_user(102, "Bo", username="bo")
    short, long = telegram.private_chat(short_user), telegram.private_chat(long_user)
    with counting_steps() as steps:
        async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                                   tuning=QUIET):
            assert await ask(telegram, bot, short, short_user, "one") == "echo: one"
            assert await ask(telegram, bot, long, long_user, "one") == "echo: one"
            await until_done(sqlite_url, 2)
            await store_turns(sqlite_url, short["id"], FEW)
            await store_turns(sqlite_url, long["id"], MANY)

            async def turns(chat: dict[str, Any], user: dict[str, Any], done: int) -> int:
                """VM steps of `TURNS` turns: the full-text index's merges land on some inserts, not on each."""
                steps.count, steps.counting = 0, True
                for n in range(TURNS):
                    assert await ask(telegram, bot, chat, user, f"again {n}") == f"echo: again {n}"
                    await until_done(sqlite_url, done + n + 1)
                steps.counting = False
                return steps.count

            few = await turns(short, short_user, 2)
            many = await turns(long, long_user, 2 + TURNS)
    assert few > 0
    assert many <= few * 1.1, f"{many} steps with {MANY} stored turns against {few} with {FEW}"
