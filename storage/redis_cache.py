"""The Redis cache, and the fallback to process memory through a Redis outage."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, cast

import redis.asyncio as redis
from redis import exceptions as redis_errors
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from storage.cache import REDIS_UNAVAILABLE_NAMES, LocalCache

log = logging.getLogger(__name__)
T = TypeVar("T")

REDIS_UNAVAILABLE: tuple[type[Exception], ...] = tuple(getattr(redis_errors, name) for name in REDIS_UNAVAILABLE_NAMES)
"""`storage.cache.REDIS_UNAVAILABLE_NAMES`, as classes."""
UNREACHABLE = (*REDIS_UNAVAILABLE, OSError)
"""The same, with the socket errors a call may raise unwrapped."""

_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""
_HIT = """
local n = redis.call('incr', KEYS[1])
if n == 1 then redis.call('pexpire', KEYS[1], ARGV[1]) end
return n
"""


class RedisCache:
    """Shared by every replica; leases and counters hold across processes."""

    def __init__(self, url: str, *, prefix: str = "gw:") -> None:
        # Bounded waits and one immediate retry: an unreachable Redis costs a call a second or two, not the
        # client's default of several backed-off reconnects.
        self._redis = redis.from_url(url, decode_responses=True, socket_connect_timeout=1.0, socket_timeout=2.0,
                                     retry=Retry(NoBackoff(), 1))
        self._prefix = prefix
        self._renew = self._redis.register_script(_RENEW)
        self._release = self._redis.register_script(_RELEASE)
        self._hit = self._redis.register_script(_HIT)

    async def set_if_absent(self, key: str, value: str, *, ttl: float) -> bool:
        return bool(await self._redis.set(self._prefix + key, value, nx=True, px=_ms(ttl)))

    async def hit_rate_limit(self, key: str, *, limit: int, window: float) -> bool:
        count = await self._hit(keys=[self._prefix + "rate:" + key], args=[_ms(window)])
        return cast(int, count) > limit  # the script returns INCR's integer, which redis-py types as Any

    async def acquire_lease(self, name: str, owner: str, *, ttl: float) -> bool:
        key = self._prefix + "lease:" + name
        if await self._redis.set(key, owner, nx=True, px=_ms(ttl)):
            return True
        return await self.renew_lease(name, owner, ttl=ttl)

    async def renew_lease(self, name: str, owner: str, *, ttl: float) -> bool:
        return bool(await self._renew(keys=[self._prefix + "lease:" + name], args=[owner, _ms(ttl)]))

    async def release_lease(self, name: str, owner: str) -> None:
        await self._release(keys=[self._prefix + "lease:" + name], args=[owner])

    async def ping(self) -> bool:
        return bool(await self._redis.ping())  # pyright: ignore[reportUnknownMemberType] - redis-py: untyped **kwargs

    async def close(self) -> None:
        await self._redis.aclose()


class FallbackCache:
    """Redis while it answers; this process's memory while it does not, with one log line each way.

    Rate limits then count per process, and `set_if_absent` holds per process. Every lease answer Redis gives
    is mirrored in memory, so through an outage the replica that held a lease keeps it and one that was refused
    waits out the lease before taking it; the inbox drops what two replicas both deliver.
    """

    OTHER_REPLICA = "(another replica)"

    def __init__(self, shared: RedisCache, local: LocalCache | None = None, *, probe_interval: float = 1.0) -> None:
        self._shared = shared
        self._local = local or LocalCache()
        self._probe_interval = probe_interval
        """While Redis is unreachable, how long to use memory alone before asking Redis again."""
        self._down_since: float | None = None
        self._next_probe = 0.0

    async def set_if_absent(self, key: str, value: str, *, ttl: float) -> bool:
        return await self._either(lambda c: c.set_if_absent(key, value, ttl=ttl))

    async def hit_rate_limit(self, key: str, *, limit: int, window: float) -> bool:
        return await self._either(lambda c: c.hit_rate_limit(key, limit=limit, window=window))

    async def acquire_lease(self, name: str, owner: str, *, ttl: float) -> bool:
        held = await self._either(lambda c: c.acquire_lease(name, owner, ttl=ttl))
        self._mirror(name, owner, held, ttl=ttl)
        return held

    async def renew_lease(self, name: str, owner: str, *, ttl: float) -> bool:
        held = await self._either(lambda c: c.renew_lease(name, owner, ttl=ttl))
        self._mirror(name, owner, held, ttl=ttl)
        return held

    async def release_lease(self, name: str, owner: str) -> None:
        await self._local.release_lease(name, owner)
        await self._either(lambda c: c.release_lease(name, owner))

    async def ping(self) -> bool:
        """Whether Redis itself answers (readiness), not whether this cache still works."""
        try:
            return await self._shared.ping()
        except UNREACHABLE:
            return False

    async def close(self) -> None:
        await self._shared.close()
        await self._local.close()

    async def _either(self, call: Callable[[RedisCache | LocalCache], Awaitable[T]]) -> T:
        if self._down_since is not None and time.monotonic() < self._next_probe:
            return await call(self._local)
        try:
            answer = await call(self._shared)
        except UNREACHABLE as exc:
            if self._down_since is None:
                self._down_since = time.monotonic()
                log.warning("Redis is unreachable (%s: %s): rate limits and leases fall back to this process "
                            "until it answers again", type(exc).__name__, exc)
            self._next_probe = time.monotonic() + self._probe_interval
            return await call(self._local)
        if self._down_since is not None:
            log.warning("Redis answers again after %.0fs: rate limits and leases are shared again",
                        time.monotonic() - self._down_since)
            self._down_since = None
        return answer

    def _mirror(self, name: str, owner: str, held: bool, *, ttl: float) -> None:
        if self._down_since is None:
            self._local.hold(name, owner if held else self.OTHER_REPLICA, ttl=ttl)


def build_redis_cache(redis_url: str) -> FallbackCache:
    return FallbackCache(RedisCache(redis_url))


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))
