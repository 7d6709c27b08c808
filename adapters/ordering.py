"""Handling a transport's events at once across conversations, in order within one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

MAX_IN_FLIGHT = 64
"""Events handled or waiting at once on one connection, before reading pauses."""


class InOrder:
    """Runs work in `group`: work of one key after the work of that key before it, other keys' at the same time.

    The first work to fail ends the group, which cancels the rest before any of it runs on: a message is never
    committed, nor acknowledged, ahead of an earlier one of its conversation. At most `MAX_IN_FLIGHT` run or wait at
    once; `submit` waits for a slot, so reading pauses.
    """

    def __init__(self, group: asyncio.TaskGroup) -> None:
        self._group = group
        self._last: dict[str, asyncio.Task[None]] = {}
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)

    async def submit(self, key: str, work: Callable[[], Awaitable[None]]) -> None:
        await self._slots.acquire()
        task = self._group.create_task(self._after(self._last.get(key), work))
        self._last[key] = task
        task.add_done_callback(lambda done: self._done(key, done))

    async def _after(self, previous: asyncio.Task[None] | None, work: Callable[[], Awaitable[None]]) -> None:
        if previous is not None:
            await asyncio.wait({previous})  # a failure there cancels this task first (the group's own callback)
        await work()

    def _done(self, key: str, task: asyncio.Task[None]) -> None:
        self._slots.release()
        if self._last.get(key) is task:
            del self._last[key]
