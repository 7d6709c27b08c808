"""SQLite transactions of one process take turns: one at a time, the urgent (the accept) ahead of the rest."""

from __future__ import annotations

import asyncio

from storage.db import Turnstile


async def test_urgent_waiters_go_first_and_a_cancelled_waiter_passes_its_turn_on() -> None:
    turnstile, order = Turnstile(), []
    holder_in, release = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with turnstile.turn():
            holder_in.set()
            await release.wait()

    async def take(name: str, urgent: bool) -> None:
        async with turnstile.turn(urgent):
            order.append(name)

    holding = asyncio.create_task(hold())
    await holder_in.wait()
    waiters = [asyncio.create_task(take("turn 1", False)), asyncio.create_task(take("gone", False)),
               asyncio.create_task(take("accept", True)), asyncio.create_task(take("turn 2", False))]
    await asyncio.sleep(0)
    waiters[1].cancel()
    release.set()
    await asyncio.gather(holding, *waiters, return_exceptions=True)
    assert order == ["accept", "turn 1", "turn 2"]
    async with turnstile.turn():  # free again
        pass
