"""A turn whose inbox lease another worker holds now (a stalled database let it lapse) stops at once, quietly: it marks
nothing stopped in the chat and records nothing, and the item's next holder answers, once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

from pydantic_ai import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel
from sqlalchemy import select, update

from storage.db import Database
from storage.models import InboxRow, MessageRow, utcnow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.records import until_done

THIEF_HOLDS = timedelta(seconds=5)
"""Longer than a renewal period (a fifth of the test lease): the turn learns of the theft before the lease lapses."""


def first_holds_until_cancelled(started: asyncio.Event, cancelled: asyncio.Event) -> FunctionModel:
    calls = 0

    async def stream(_messages: list[ModelMessage], _info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        nonlocal calls
        calls += 1
        if calls > 1:
            yield "answered once"
            return
        yield "thinking "
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def complete(_messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        raise AssertionError("this model only streams")

    return FunctionModel(complete, stream_function=stream)


async def steal_the_running_item(database_url: str) -> None:
    db = Database(database_url)
    try:
        async with db.session() as session:
            await session.execute(update(InboxRow).where(InboxRow.status == "running").values(
                lease_owner="another-replica", lease_until=utcnow() + THIEF_HOLDS))
    finally:
        await db.close()


async def test_a_turn_whose_lease_another_worker_took_stops_quietly_and_the_item_is_answered_once(
        telegram: FakeTelegram, database_url: str) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.group(-4101, "Ops")
    telegram.add_member(chat, bot.user)
    telegram.add_member(chat, alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=first_holds_until_cancelled(started, cancelled)):
        await telegram.user_says(bot.token, chat, alice, f"@{bot.username} hello")
        await asyncio.wait_for(started.wait(), timeout=30)
        await steal_the_running_item(database_url)
        await asyncio.wait_for(cancelled.wait(), timeout=30)
        await telegram.wait_for(lambda: [m["text"] for m in telegram.bot_messages(chat["id"])] == ["answered once"])
        await until_done(database_url, 1)
    db = Database(database_url)
    try:
        async with db.session() as session:
            roles = (await session.execute(select(MessageRow.role).order_by(MessageRow.id))).scalars().all()
            attempts = (await session.execute(select(InboxRow.attempts))).scalars().all()
    finally:
        await db.close()
    assert roles == ["user", "assistant"]
    assert attempts == [2]
    shown = [str(call.params.get("text", "")) for call in telegram.calls
             if call.method in ("sendMessage", "editMessageText")]
    assert not any("topped" in text for text in shown), shown
