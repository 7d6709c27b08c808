"""How many database transactions one plain Telegram turn costs, from the accept to the finished inbox item.

Counted with SQLAlchemy's engine events on the gateway's own engine. The sweeps (approval expiry, inbox pruning,
the outbox's look for cut-off uploads) run on their own clock whether anybody writes or not, so they are left out;
everything else a turn causes counts, the worker's claims after it included: the count ends when the gateway has
stopped, not after a pause.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from sqlalchemy import select

from storage.db import Database
from storage.models import InboxRow, MessageRow, RunRow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import QUIET, TelegramBot, ask, running_gateway
from tests.support.records import until_done
from tests.support.scripted import echoes
from tests.support.transactions import counting, listed

PLAIN_TURN_TRANSACTIONS = 5
"""The accept, the claim, the turn's start (user turn, history, run), the first post's id (stored by itself right
after it is posted, since a Telegram retry could not find it again) and the turn's end (answer, run, item)."""

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
        assert counted.transactions <= PLAIN_TURN_TRANSACTIONS, listed(counted)
        assert not any("delegate_questions" in sql for statements in counted.statements for sql in statements), \
            "an agent binding nothing that asks in the chat has no open question to look for"

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
