"""Connects each bot and keeps its socket or polling connection alive, on one replica at a time."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from adapters.base import Deliver, MenuCommand, PlatformConfigError
from adapters.protocols import Connection, ListsCommands, Transport
from gateway.pipeline.metrics import GatewayMetrics
from gateway.pipeline.tasks import cancel_and_wait
from storage.cache import Cache

log = logging.getLogger(__name__)


class Supervisor:
    """Holds a bot's transport under a lease, so one replica at a time connects.

    The holder renews its lease every quarter of `lease_ttl`; a standby replica asks for the lease on that
    same fixed interval, so it takes over within about `lease_ttl` of the holder's death. Without a shared `cache`
    (one process, nobody to hand over to) there is no lease, and an idle bot costs no timer at all. A failed
    connection waits `first_delay`, doubling to `max_delay`, reset after one that stayed healthy: the
    backoff is for failures only, never for waiting as a standby.
    """

    def __init__(self, adapter: Connection, deliver: Deliver, *, cache: Cache | None, owner: str,
                 lease_ttl: float = 8.0, first_delay: float = 5.0, max_delay: float = 60.0,
                 healthy_after: float = 60.0, metrics: GatewayMetrics | None = None,
                 menu: Sequence[MenuCommand] = ()) -> None:
        """`menu`: the commands registered in the platform's command menu once the bot is signed in, where it has
        one (`ListsCommands`)."""
        self._menu = menu
        self._adapter = adapter
        self._metrics = metrics or GatewayMetrics({})
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
            held_since = None
            try:
                transport = await self._open()
                if transport is None:
                    self._metrics.transport(self._adapter.bot_id, connected=True)  # webhooks: signed in is all
                    return
                await self._acquire()
                held_since = time.monotonic()
                await self._hold_leased(transport)
            except PlatformConfigError as exc:
                log.error("bot %r stopped: %s", self._adapter.bot_id, exc)
                return
            except Exception as exc:  # any connection failure retries after the backoff below
                log.warning("bot %r: connection failed: %s: %s", self._adapter.bot_id, type(exc).__name__, exc)
            if held_since is not None and time.monotonic() - held_since >= self._healthy_after:
                delay = self._first_delay
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._max_delay)

    async def _open(self) -> Transport | None:
        """Sign the bot in once; its transport, or None when events arrive over a webhook instead."""
        if self._adapter.identity is None:
            me = await self._adapter.open()
            log.info("bot %r connected as %s (%s)", self._adapter.bot_id, me.handle or me.display_name, me.user_id)
            await self._register_menu()
        return self._adapter.transport

    async def _register_menu(self) -> None:
        """Once per sign-in; a platform that refuses (no permission to create commands) leaves the words working."""
        if not self._menu or not isinstance(self._adapter, ListsCommands):
            return
        try:
            await self._adapter.register_commands(self._menu)
        except Exception as exc:  # the commands still work as words; the menu is a convenience
            log.warning("bot %r: its commands could not be registered in the platform's menu, they still work as "
                        "messages: %s: %s", self._adapter.bot_id, type(exc).__name__, exc)

    async def _hold_leased(self, transport: Transport) -> None:
        bot = self._adapter.bot_id
        self._metrics.lease_changed(bot, "acquired")
        self._metrics.transport(bot, connected=True)
        try:
            await self._hold(transport)
            log.warning("transport of bot %r ended; reconnecting", bot)
        finally:
            self._metrics.transport(bot, connected=False)
            self._metrics.lease_changed(bot, "lost")
            if self._cache is not None:
                await self._cache.release_lease(self._lease, self._owner)

    async def _acquire(self) -> None:
        """Wait as a standby until the transport lease is ours, asking on a fixed interval."""
        while self._cache is not None:
            if await self._cache.acquire_lease(self._lease, self._owner, ttl=self._lease_ttl):
                return
            await asyncio.sleep(self._lease_ttl / 4)  # another replica's lease: nothing announces its end

    async def _hold(self, transport: Transport) -> None:
        """The transport runs in a task of its own: each event it waits for resumes that task, not this one."""
        running = asyncio.create_task(transport.run_transport(self._deliver),
                                      name=f"transport: {self._adapter.bot_id}")
        try:
            if self._cache is None:
                return await running
            while True:
                done, _ = await asyncio.wait({running}, timeout=self._lease_ttl / 4)
                if done:
                    return running.result()
                if not await self._cache.renew_lease(self._lease, self._owner, ttl=self._lease_ttl):
                    log.warning("bot %r: another replica took the transport lease", self._adapter.bot_id)
                    return None
        finally:
            if not running.done():
                await cancel_and_wait(running)

