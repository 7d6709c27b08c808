"""How many database transactions one plain Telegram turn costs, from the accept to the finished inbox item.

Counted with SQLAlchemy's engine events on the gateway's own engine. The sweeps (approval expiry, inbox pruning,
the outbox's look for cut-off uploads) run on their own clock whether anybody writes or not, so they are left out;
everything else a turn causes counts, the worker's claims after it included: the count ends when the gateway has
stopped, not after a pause.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

import pytest
from sqlalchemy import select

from gateway.pipeline.live_reply import SENT_FROM_DRAFTS
from storage.db import Database
from storage.models import InboxRow, MessageRow, RunRow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import QUIET, TelegramBot, ask, running_gateway
from tests.support.records import until_done
from tests.support.scripted import echoes
from tests.support.transactions import counting, listed

PLAIN_TURN_TRANSACTIONS = {"direct": 5, "group": 4}
"""The accept, the claim, the turn's start (user turn, history, run) and the turn's end (answer, run, item). In a
direct chat, where the answer shows as drafts and is sent once, "sent" is stored by itself just before the send:
a retry after a kill then sends nothing rather than a second answer. In a group an answer done before its first
post is due is posted whole, its id stored with the turn's end; one that streams longer stores its first post's id
right after posting it, since a Telegram retry could not find it again."""


@pytest.mark.parametrize("kind", ["direct", "group"])
async def test_a_plain_turn_costs_few_transactions(telegram: FakeTelegram, database_url: str, kind: str) -> None:
    bot = TelegramBot().register(telegram)
    user = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(user) if kind == "direct" else telegram.group(-200, "Team")
    mention, speaker = ("", "") if kind == "direct" else (f"@{bot.username} ", "[Ada] ")
    async with AsyncExitStack() as running:
        gateway = await running.enter_async_context(running_gateway(
            telegram, [bot], database_url=database_url, redis_url=None, model=echoes(), tuning=QUIET))
        assert await ask(telegram, bot, chat, user, f"{mention}warm up") == f"echo: {speaker}warm up"
        await until_done(database_url, 1)
        with counting(gateway) as counted:
            assert await ask(telegram, bot, chat, user, f"{mention}hello") == f"echo: {speaker}hello"
            await until_done(database_url, 2)
            await running.aclose()  # the gateway stopped and its workers drained: all the turn causes is counted
        assert counted.commits == counted.begins, counted.statements
        assert counted.transactions <= PLAIN_TURN_TRANSACTIONS[kind], listed(counted)
        assert not any("delegate_questions" in sql for statements in counted.statements for sql in statements), \
            "an agent binding nothing that asks in the chat has no open question to look for"

    check = Database(database_url)
    try:
        async with check.session() as session:
            roles = (await session.execute(select(MessageRow.role).order_by(MessageRow.id))).scalars().all()
            runs = (await session.execute(select(RunRow.status))).scalars().all()
            replies = (await session.execute(select(InboxRow.reply_message_id))).scalars().all()
            answers = (await session.execute(select(MessageRow.platform_message_id)
                                             .where(MessageRow.role == "assistant"))).scalars().all()
    finally:
        await check.close()
    assert roles == ["user", "assistant", "user", "assistant"]  # what the turn must still record
    assert runs == ["answered", "answered"]
    assert all(answer is not None for answer in answers)  # the history knows which message each answer is
    if kind == "direct":
        assert replies == [SENT_FROM_DRAFTS] * 2  # stored before the send: a retry sends nothing more
