"""Workers lease inbox items and run one turn per conversation at a time, renewing leases while they run."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta

from gateway.pipeline.inbox import Inbox, InboxItem

log = logging.getLogger(__name__)

Handler = Callable[[InboxItem], Awaitable[None]]


class Worker:
    def __init__(self, inbox: Inbox, handle: Handler, *, concurrency: int = 8,
                 lease: timedelta = timedelta(seconds=10), idle_poll: float = 1.0) -> None:
        self.worker_id = f"worker-{uuid.uuid4().hex[:12]}"
        self._inbox = inbox
        self._handle = handle
        self._concurrency = concurrency
        self._lease = lease
        self._idle_poll = idle_poll
        self._wake = asyncio.Event()
        self._running: dict[int, asyncio.Task[None]] = {}
        self._draining = False

    def wake(self) -> None:
        """A new item was accepted in this process: look now instead of at the next poll."""
        self._wake.set()

    async def run(self) -> None:
        heartbeat = asyncio.create_task(self._renew_leases())
        try:
            while True:
                await self._claim_and_start()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._idle_poll):
                        await self._wake.wait()
                self._wake.clear()
        finally:
            heartbeat.cancel()
            for task in self._running.values():
                task.cancel()
            await asyncio.gather(heartbeat, *self._running.values(), return_exceptions=True)

    async def drain(self, grace: float) -> None:
        """Stop claiming and give running turns `grace` seconds; unfinished ones keep their lease and retry."""
        self._draining = True
        running = list(self._running.values())
        if running and grace > 0:
            await asyncio.wait(running, timeout=grace)

    async def _claim_and_start(self) -> None:
        free = self._concurrency - len(self._running)
        if free <= 0 or self._draining:
            return
        try:
            items = await self._inbox.claim(self.worker_id, lease=self._lease, limit=free)
        except Exception as exc:  # a database hiccup must not kill the worker; the next poll retries
            log.error("claiming inbox items failed: %s", exc)
            return
        for item in items:
            self._running[item.id] = asyncio.create_task(self._process(item))

    async def _process(self, item: InboxItem) -> None:
        try:
            await self._handle(item)
        except Exception as exc:
            log.exception("turn for inbox item %d failed (attempt %d)", item.id, item.attempts)
            await self._inbox.fail(self.worker_id, item, f"{type(exc).__name__}: {exc}")
        else:
            await self._inbox.complete(self.worker_id, item.id)
        finally:
            self._running.pop(item.id, None)
            self.wake()

    async def _renew_leases(self) -> None:
        interval = self._lease.total_seconds() / 4
        while True:
            await asyncio.sleep(interval)
            try:
                await self._inbox.extend_leases(self.worker_id, list(self._running), lease=self._lease)
            except Exception as exc:  # keep renewing; a lost lease only means another worker may retry
                log.error("renewing inbox leases failed: %s", exc)
