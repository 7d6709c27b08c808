"""A transport's events of different conversations are handled at once, one conversation's in the order they came."""

from __future__ import annotations

import asyncio

import pytest

from adapters import wire
from adapters.wire import InOrder


async def test_a_slow_channel_holds_up_only_its_own_envelopes() -> None:
    slow, fast_done, done = asyncio.Event(), asyncio.Event(), []

    async def work(name: str, wait: asyncio.Event | None = None) -> None:
        if wait is not None:
            await wait.wait()
        done.append(name)
        if name == "fast":
            fast_done.set()

    async with InOrder() as order:
        await order.submit("C-slow", lambda: work("slow first", slow))
        await order.submit("C-slow", lambda: work("slow second"))
        await order.submit("C-fast", lambda: work("fast"))
        await asyncio.wait_for(fast_done.wait(), 5)
        assert done == ["fast"]  # the other channel's envelope did not wait for the slow one
        slow.set()
    assert done == ["fast", "slow first", "slow second"]


async def test_after_a_failure_the_channel_handles_nothing_more_and_the_connection_ends() -> None:
    ran = []

    async def fails() -> None:
        raise ConnectionError("database down")

    async def later() -> None:
        ran.append("later")

    with pytest.raises(ConnectionError, match="database down"):
        async with InOrder() as order:
            await order.submit("C1", fails)
            await order.submit("C1", later)
    assert ran == []  # never committed ahead of the one before it, never acknowledged


async def test_reading_pauses_once_the_envelopes_in_flight_reach_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "MAX_IN_FLIGHT", 2)
    release = asyncio.Event()

    async def blocked() -> None:
        await release.wait()

    async with InOrder() as order:
        await order.submit("C1", blocked)
        await order.submit("C2", blocked)
        third = asyncio.create_task(order.submit("C3", blocked))
        for _ in range(10):  # however often the loop turns, no slot frees up while both are blocked
            await asyncio.sleep(0)
        assert not third.done()  # no slot: the reader waits here instead of reading on
        release.set()
        await third
