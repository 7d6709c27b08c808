"""Connects each bot and keeps its socket or polling connection alive, on one replica at a time."""

from __future__ import annotations

import asyncio
import logging
import time

from adapters.base import Deliver, PlatformConfigError
from adapters.protocols import Connection, Transport
from gateway.pipeline.tasks import cancel_and_wait
from storage.cache import Cache

log = logging.getLogger(__name__)


class Supervisor:
    """Backoff from `first_delay` doubling to `max_delay`, reset after a connection that stayed healthy."""

    def __init__(self, adapter: Connection, deliver: Deliver, *, cache: Cache, owner: str,
                 lease_ttl: float = 30.0, first_delay: float = 5.0, max_delay: float = 60.0,
                 healthy_after: float = 60.0) -> None:
        self._adapter = adapter
        self._deliver = deliver
        self._cache = cache
        self._owner = owner
        self._lease = f"transport:{adapter.platform}:{adapter.bot_id}"
        self._lease_ttl = lease_ttl
        self._first_delay = first_delay
        self._max_delay = max_delay
        self._healthy_after = healthy_after

    async def run(self) -> None:
        delay = self._first_delay
        while True:
            started = time.monotonic()
            try:
                if not await self._connect_once():
                    return
            except PlatformConfigError as exc:
                log.error("bot %r stopped: %s", self._adapter.bot_id, exc)
                return
            except Exception as exc:  # any connection failure retries after the backoff below
                log.warning("bot %r: connection failed: %s: %s", self._adapter.bot_id, type(exc).__name__, exc)
            if time.monotonic() - started >= self._healthy_after:
                delay = self._first_delay
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._max_delay)

    async def _connect_once(self) -> bool:
        """Open the bot, then hold its transport while the lease is ours. False: nothing more to hold."""
        if self._adapter.identity is None:
            me = await self._adapter.open()
            log.info("bot %r connected as %s (%s)", self._adapter.bot_id, me.handle or me.display_name, me.user_id)
        transport = self._adapter.transport
        if transport is None:
            return False
        if not await self._cache.acquire_lease(self._lease, self._owner, ttl=self._lease_ttl):
            await asyncio.sleep(self._lease_ttl / 3)
            return True
        try:
            await self._hold(transport)
            log.warning("transport of bot %r ended; reconnecting", self._adapter.bot_id)
        finally:
            await self._cache.release_lease(self._lease, self._owner)
        return True

    async def _hold(self, transport: Transport) -> None:
        running = asyncio.create_task(transport.run_transport(self._deliver))
        try:
            while True:
                done, _ = await asyncio.wait({running}, timeout=self._lease_ttl / 3)
                if done:
                    return running.result()
                if not await self._cache.renew_lease(self._lease, self._owner, ttl=self._lease_ttl):
                    log.warning("bot %r: another replica took the transport lease", self._adapter.bot_id)
                    return None
        finally:
            if not running.done():
                await cancel_and_wait(running)

