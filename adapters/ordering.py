"""Handling a transport's events at once across conversations, in order within one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

MAX_IN_FLIGHT = 64
"""Events handled or waiting at once on one connection, before reading pauses."""


class InOrder:
    """`async with InOrder() as order`: work of one key after the work of that key before it, other keys' at the
    same time; leaving the block waits for all of it.

    The first work to fail cancels the rest before any of it runs on (a message is never committed, nor
    acknowledged, ahead of an earlier one of its conversation), and leaving the block raises that failure itself.
    At most `MAX_IN_FLIGHT` run or wait at once; `submit` waits for a slot, so reading pauses.
    """

    def __init__(self) -> None:
        self._group = asyncio.TaskGroup()
        self._last: dict[str, asyncio.Task[None]] = {}
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)

    async def __aenter__(self) -> InOrder:
        await self._group.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        try:
            await self._group.__aexit__(*exc_info)
        except ExceptionGroup as failed:  # the caller sees the first failure, as it would without the group
            raise failed.exceptions[0] from None

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
