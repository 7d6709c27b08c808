"""A turn whose inbox lease another worker holds now (a stalled database let it lapse) stops at once, quietly: it marks
nothing stopped in the chat and records nothing, and the item's next holder answers, once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta

from pydantic_ai import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel
from sqlalchemy import select, update

from gateway.pipeline.runtime import CUT_OFF
from storage.db import Database
from storage.models import InboxRow, MessageRow, utcnow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import FAST, TelegramBot, running_gateway
from tests.support.records import inbox_rows, run_rows, until_done

THIEF_HOLDS = timedelta(seconds=5)
"""Longer than a renewal period (a fifth of the test lease): the turn learns of the theft before the lease lapses."""


async def until_claimed_again(database_url: str) -> None:
    """Wait (the database tells no one) until the item's second attempt is claimed."""
    async with asyncio.timeout(30):
        while True:
            if await attempts_of_the_item(database_url) == [2]:
                return
            await asyncio.sleep(0.05)


async def roles_in_history(database_url: str) -> list[str]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(MessageRow.role).order_by(MessageRow.id))).scalars())
    finally:
        await db.close()


def first_holds(started: asyncio.Event, cancelled: asyncio.Event, *, gate: asyncio.Event | None = None,
                calls: list[int] | None = None) -> FunctionModel:
    """The first request streams "thinking " and holds until `gate` is set (or it is cancelled, which it tells);
    every request is counted in `calls`, and a later one answers at once."""
    counted = calls if calls is not None else []

    async def stream(_messages: list[ModelMessage], _info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        counted.append(len(counted) + 1)
        if len(counted) > 1:
            yield "answered once"
            return
        yield "thinking "
        started.set()
        try:
            await (gate or asyncio.Event()).wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        yield "and answered once"

    def complete(_messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        raise AssertionError("this model only streams")

    return FunctionModel(complete, stream_function=stream)


async def set_running_lease(database_url: str, **values: object) -> None:
    db = Database(database_url)
    try:
        async with db.session() as session:
            await session.execute(update(InboxRow).where(InboxRow.status == "running").values(**values))
    finally:
        await db.close()


async def attempts_of_the_item(database_url: str) -> list[int]:
    return [row.attempts for row in await inbox_rows(database_url)]


async def test_a_turn_whose_lease_another_worker_took_stops_quietly_and_the_item_is_answered_once(
        telegram: FakeTelegram, database_url: str) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.group(-4101, "Ops")
    telegram.add_member(chat, bot.user)
    telegram.add_member(chat, alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=first_holds(started, cancelled)):
        await telegram.user_says(bot.token, chat, alice, f"@{bot.username} hello")
        await asyncio.wait_for(started.wait(), timeout=30)
        await set_running_lease(database_url, lease_owner="another-replica", lease_until=utcnow() + THIEF_HOLDS)
        await asyncio.wait_for(cancelled.wait(), timeout=30)
        await telegram.wait_for(lambda: [m["text"] for m in telegram.bot_messages(chat["id"])] == ["answered once"])
        await until_done(database_url, 1)
    assert await roles_in_history(database_url) == ["user", "assistant"]
    assert await attempts_of_the_item(database_url) == [2]
    # the first attempt's run is closed by the second, not left running for the console forever
    assert [(run.status, run.error == CUT_OFF, run.finished_at is not None) for run in await run_rows(database_url)] \
        == [("failed", True, True), ("answered", False, True)]
    shown = [str(call.params.get("text", "")) for call in telegram.calls
             if call.method in ("sendMessage", "editMessageText")]
    assert not any("topped" in text for text in shown), shown


async def test_a_worker_that_claims_its_own_running_item_again_runs_no_second_turn(telegram: FakeTelegram,
                                                                                    database_url: str) -> None:
    """The lease lapsed while the turn ran here (a stall longer than it), and this worker's own next claim took the
    item back: the turn running here goes on, and no second one starts beside it."""
    started, cancelled, gate, calls = asyncio.Event(), asyncio.Event(), asyncio.Event(), []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.group(-4102, "Ops")
    telegram.add_member(chat, bot.user)
    telegram.add_member(chat, alice)
    slow_renewal = replace(FAST, worker_lease=timedelta(seconds=60))  # no renewal during the test: only the claim
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, tuning=slow_renewal,
                               model=first_holds(started, cancelled, gate=gate, calls=calls)):
        await telegram.user_says(bot.token, chat, alice, f"@{bot.username} hello")
        await asyncio.wait_for(started.wait(), timeout=30)
        await set_running_lease(database_url, lease_until=utcnow() - timedelta(seconds=1))
        await until_claimed_again(database_url)
        gate.set()
        await telegram.wait_for(lambda: [m["text"] for m in telegram.bot_messages(chat["id"])]
                                == ["thinking and answered once"])
        await until_done(database_url, 1)
    assert calls == [1] and not cancelled.is_set()
    assert await roles_in_history(database_url) == ["user", "assistant"]
