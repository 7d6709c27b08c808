"""How many database transactions one plain Telegram turn costs, from the accept to the finished inbox item.

Counted with SQLAlchemy's engine events on the gateway's own engine. The sweeps (approval expiry, inbox pruning,
the outbox's look for cut-off uploads) run on their own clock whether anybody writes or not, so they are left out;
everything else a turn causes counts, the worker's claims after it included: the count ends when the gateway has
stopped, not after a pause.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event, select

from gateway.server.app import Gateway
from storage.db import Database
from storage.models import InboxRow, MessageRow, RunRow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import QUIET, TelegramBot, ask, running_gateway
from tests.support.records import until_done
from tests.support.scripted import echoes

PLAIN_TURN_TRANSACTIONS = 5
"""The accept, the claim, the turn's start (user turn, history, run), the first post's id (stored by itself right
after it is posted, since a Telegram retry could not find it again) and the turn's end (answer, run, item)."""

OUTBOX_LOOK = "SELECT min(outbox_files.claimed_until)"
"""The outbox sweep's look for uploads cut off mid-way, a second after the start and then only every `file_claim`:
it runs on the database's thread (`Database.run`), where no task name tells it from a turn's work, so it is told
by its one statement."""


@dataclass
class Counted:
    begins: int = 0
    commits: int = 0
    statements: list[list[str]] = field(default_factory=list)

    @property
    def turns(self) -> list[list[str]]:
        """Each transaction's statements, the outbox sweep's look left out."""
        return [s for s in self.statements if not (len(s) == 1 and s[0].startswith(OUTBOX_LOOK))]


@contextmanager
def counting(gateway: Gateway) -> Iterator[Counted]:
    assert gateway.db is not None and gateway.db.sync_engine is not None
    engines = (gateway.db.engine.sync_engine, gateway.db.sync_engine)  # `transaction()`'s and `run()`'s
    counted = Counted()

    def in_sweep() -> bool:
        try:
            task = asyncio.current_task()
        except RuntimeError:  # the database's own thread (`Database.run`), where no sweep runs
            return False
        return task is not None and task.get_name().startswith("sweep")

    def begin(conn: Any) -> None:
        if not in_sweep():
            counted.begins += 1
            counted.statements.append([])
            if conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT":
                counted.commits += 1  # one statement that commits on its own (`Database.run(single=True)`)

    def commit(_conn: Any) -> None:
        if not in_sweep():
            counted.commits += 1

    def statement(_conn: Any, _cursor: Any, sql: str, *_: Any) -> None:
        if not in_sweep() and counted.statements:
            counted.statements[-1].append(" ".join(sql.split())[:90])

    for engine in engines:
        event.listen(engine, "begin", begin)
        event.listen(engine, "commit", commit)
        event.listen(engine, "before_cursor_execute", statement)
    try:
        yield counted
    finally:
        for engine in engines:
            event.remove(engine, "begin", begin)
            event.remove(engine, "commit", commit)
            event.remove(engine, "before_cursor_execute", statement)


async def test_a_plain_turn_costs_at_most_four_transactions(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    user = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(user)
    async with AsyncExitStack() as running:
        gateway = await running.enter_async_context(running_gateway(
            telegram, [bot], database_url=database_url, redis_url=None, model=echoes(), tuning=QUIET))
        assert await ask(telegram, bot, chat, user, "warm up") == "echo: warm up"
        await until_done(database_url, 1)
        with counting(gateway) as counted:
            assert await ask(telegram, bot, chat, user, "hello") == "echo: hello"
            await until_done(database_url, 2)
            await running.aclose()  # the gateway stopped and its workers drained: all the turn causes is counted
        assert counted.commits == counted.begins, counted.statements
        assert len(counted.turns) <= PLAIN_TURN_TRANSACTIONS, "\n".join(
            f"{n}: {' | '.join(s)}" for n, s in enumerate(counted.turns, 1))

    check = Database(database_url)
    try:
        async with check.session() as session:
            roles = (await session.execute(select(MessageRow.role).order_by(MessageRow.id))).scalars().all()
            runs = (await session.execute(select(RunRow.status))).scalars().all()
            replies = (await session.execute(select(InboxRow.reply_message_id))).scalars().all()
    finally:
        await check.close()
    assert roles == ["user", "assistant", "user", "assistant"]  # what the turn must still record
    assert runs == ["answered", "answered"]
    assert all(reply is not None for reply in replies)  # a retry edits the message it posted
