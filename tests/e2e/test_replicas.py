"""Two gateway replicas on one PostgreSQL and one Redis: one poller, and one run per turn."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import timedelta

import pytest
from pydantic_ai.models.function import FunctionModel

from gateway.server.app import Gateway
from tests.conftest import REDIS
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import FAST, TelegramBot, running_gateway
from tests.support.records import until_done
from tests.support.scripted import echoes

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


def texts(telegram: FakeTelegram, chat_id: int) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat_id)]


async def test_the_polling_transport_moves_to_the_surviving_replica(telegram: FakeTelegram,
                                                                    database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    quick_handover = replace(FAST, transport_lease_ttl=1.0)

    def lease(gateway: Gateway, change: str) -> float | None:
        return gateway.metrics.registry.get_sample_value(
            "gateway_transport_lease_changes_total", {"bot": bot.name, "platform": "telegram", "change": change})

    async with AsyncExitStack() as stack:
        first: Gateway = await stack.enter_async_context(running_gateway(
            telegram, [bot], database_url=database_url, redis_url=REDIS, model=echoes(), tuning=quick_handover))
        await telegram.wait_for(lambda: lease(first, "acquired") == 1)
        second: Gateway = await stack.enter_async_context(running_gateway(
            telegram, [bot], database_url=database_url, redis_url=REDIS, model=echoes(), tuning=quick_handover))
        await telegram.user_says(bot.token, chat, alice, "one")
        await telegram.wait_for(lambda: texts(telegram, chat["id"]) == ["echo: one"])
        # Its turn ended, then the replica holding the poller dies; its lease runs out. (A kill between a private
        # chat's answer and its turn's end leaves the answer out of the history: README's crash windows.)
        await until_done(database_url, 1)
        await first.abort()
        await telegram.user_says(bot.token, chat, alice, "two")
        await telegram.wait_for(lambda: texts(telegram, chat["id"]) == ["echo: one", "echo: two"], timeout=10)
        # The survivor may lose and win its one-second lease again on a loaded machine; it won it at least once.
        assert (lease(first, "acquired"), lease(first, "lost"), (lease(second, "acquired") or 0) >= 1) == (
            1, 1, True), "the handover shows in both replicas' lease changes"


async def test_a_turn_longer_than_its_lease_is_not_run_twice(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    calls: list[str] = []

    async def slow(messages, _info):
        calls.append("model")
        await asyncio.sleep(2.5)  # five lease lengths of work: only renewals keep it ours
        yield "finally"

    short_lease = replace(FAST, worker_lease=timedelta(seconds=0.5))
    async with AsyncExitStack() as stack:
        for _ in range(2):
            await stack.enter_async_context(running_gateway(
                telegram, [bot], database_url=database_url, redis_url=REDIS,
                model=FunctionModel(stream_function=slow), tuning=short_lease))
        await telegram.user_says(bot.token, chat, alice, "take your time")
        await telegram.wait_for(lambda: texts(telegram, chat["id"]) == ["finally"], timeout=10)
    assert calls == ["model"]
