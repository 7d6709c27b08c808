"""A resume ends as a turn does: the parked run marked resumed, the run's row answered, the answer in the history,
whether a click's inbox item commits it or the expiry sweep, with no item, commits it by itself."""

from __future__ import annotations

from sqlalchemy import select, update

from storage.db import Database
from storage.models import MessageRow, ParkedRunRow, RunRow
from tests.e2e.test_telegram_approvals import awaiting_decision, buttons, texts
from tests.support.fakes.telegram import FakeTelegram
from tests.support.records import until_resumed


async def ended(database_url: str) -> tuple[list[str], list[str], list[str]]:
    """The history's roles, the runs' statuses and the parked runs' statuses."""
    check = Database(database_url)
    try:
        async with check.session() as session:
            roles = (await session.execute(select(MessageRow.role).order_by(MessageRow.id))).scalars().all()
            runs = (await session.execute(select(RunRow.status))).scalars().all()
            parked = (await session.execute(select(ParkedRunRow.status))).scalars().all()
    finally:
        await check.close()
    return list(roles), list(runs), list(parked)


async def test_a_resume_the_expiry_sweep_started_records_its_end(telegram: FakeTelegram, sqlite_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, sqlite_url, chat=chat, asker=alice, text="deploy web",
                                 binding={"approvals": {"expires_after": 1}}):
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"), timeout=10)
        await until_resumed(sqlite_url, 1)  # the answer is shown before its end commits
    assert await ended(sqlite_url) == (["user", "assistant"], ["answered"], ["resumed"])


async def test_a_run_parked_without_what_it_booked_in_its_snapshot_resumes_from_its_row(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    """A run parked by a gateway whose snapshots did not yet carry `booked` reads its run row instead."""
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, sqlite_url, chat=chat, asker=alice, text="deploy web") as pending:
        db = Database(sqlite_url)
        try:
            async with db.session() as session:
                [parked] = (await session.execute(select(ParkedRunRow))).scalars().all()
                older = {key: value for key, value in parked.turn.items() if key != "booked"}
                await session.execute(update(ParkedRunRow).values(turn=older))
        finally:
            await db.close()
        await telegram.user_clicks(pending.bot.token, pending.card, alice, buttons(pending.card)["✅ Approve"])
        await until_resumed(sqlite_url, 1)
    assert texts(telegram, chat["id"])[-1] == "done: deployed web" and pending.executed == ["web"]
    assert await ended(sqlite_url) == (["user", "assistant"], ["answered"], ["resumed"])
