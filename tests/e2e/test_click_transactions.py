"""How many database transactions an Approve click costs, from its accept to the resumed run's answer and the
finished inbox item (counted as `tests/e2e/test_turn_transactions.py` counts a plain turn)."""

from __future__ import annotations

from contextlib import AsyncExitStack

from sqlalchemy import select

from storage.db import Database
from storage.models import InboxRow, MessageRow, ParkedRunRow, RunRow
from tests.e2e.test_telegram_approvals import buttons, cards, texts
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import QUIET, TelegramBot, running_gateway
from tests.support.records import until_done
from tests.support.scripted import calls_then_answers
from tests.support.transactions import counting, listed

CLICK_TRANSACTIONS = 9
"""The accept, the claim, the approval read, the decision (which marks the card closed), the resume's claim (open
questions looked for in its one statement), the decisions read, the run row back to running, the look for files the
parked turn left, and the resume's end (parked run, run row, answer, item) as one, as a plain turn's end is."""


async def test_an_approve_click_costs_at_most_its_budget_of_transactions(telegram: FakeTelegram,
                                                                         database_url: str) -> None:
    executed: list[str] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with AsyncExitStack() as running:
        gateway = await running.enter_async_context(running_gateway(
            telegram, [bot], database_url=database_url, redis_url=None, tuning=QUIET,
            model=calls_then_answers(("deploy_service", {"service": "web"})), registry=deploy_registry(executed),
            capabilities=[{"id": "deploy"}]))
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
        await until_done(database_url, 1)
        card = cards(telegram, chat["id"])[0]
        with counting(gateway) as counted:
            await telegram.user_clicks(bot.token, card, alice, buttons(card)["✅ Approve"])
            await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["done: deployed web"])
            await until_done(database_url, 2)
            await running.aclose()  # the gateway stopped and its workers drained: all the click causes is counted
        assert counted.commits == counted.begins, counted.statements
        assert counted.transactions <= CLICK_TRANSACTIONS, listed(counted)

    assert executed == ["web"]
    check = Database(database_url)
    try:
        async with check.session() as session:
            roles = (await session.execute(select(MessageRow.role).order_by(MessageRow.id))).scalars().all()
            runs = (await session.execute(select(RunRow.status))).scalars().all()
            parked = (await session.execute(select(ParkedRunRow.status))).scalars().all()
            items = (await session.execute(select(InboxRow.status))).scalars().all()
    finally:
        await check.close()
    assert roles == ["user", "assistant"]  # what the resume must still record
    assert runs == ["answered"] and parked == ["resumed"] and items == ["done", "done"]
