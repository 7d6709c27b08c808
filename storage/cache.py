"""Short-lived shared state: rate-limit windows and leases. Redis, or process memory for one process."""

from __future__ import annotations

import time
from typing import Protocol

import redis.asyncio as redis

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


class Cache(Protocol):
    async def set_if_absent(self, key: str, value: str, *, ttl: float) -> bool: ...

    async def hit_rate_limit(self, key: str, *, limit: int, window: float) -> bool:
        """Count one event in a fixed window; True when it is over the limit."""
        ...

    async def acquire_lease(self, name: str, owner: str, *, ttl: float) -> bool: ...

    async def renew_lease(self, name: str, owner: str, *, ttl: float) -> bool: ...

    async def release_lease(self, name: str, owner: str) -> None: ...

    async def close(self) -> None: ...


class RedisCache:
    """Shared by every replica; leases and counters hold across processes."""

    def __init__(self, url: str, *, prefix: str = "gw:") -> None:
        self._redis = redis.from_url(url, decode_responses=True)
        self._prefix = prefix
        self._renew = self._redis.register_script(_RENEW)
        self._release = self._redis.register_script(_RELEASE)
        self._hit = self._redis.register_script(_HIT)

    async def set_if_absent(self, key: str, value: str, *, ttl: float) -> bool:
        return bool(await self._redis.set(self._prefix + key, value, nx=True, px=_ms(ttl)))

    async def hit_rate_limit(self, key: str, *, limit: int, window: float) -> bool:
        count = await self._hit(keys=[self._prefix + "rate:" + key], args=[_ms(window)])
        return int(count) > limit

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
        return bool(await self._redis.ping())

    async def close(self) -> None:
        await self._redis.aclose()


class LocalCache:
    """Process memory: correct only while a single gateway process runs."""

    def __init__(self) -> None:
        self._values: dict[str, tuple[str, float]] = {}

    def _live(self, key: str) -> str | None:
        entry = self._values.get(key)
        if entry is None or entry[1] <= time.monotonic():
            self._values.pop(key, None)
            return None
        return entry[0]

    async def set_if_absent(self, key: str, value: str, *, ttl: float) -> bool:
        if self._live(key) is not None:
            return False
        self._values[key] = (value, time.monotonic() + ttl)
        return True

    async def hit_rate_limit(self, key: str, *, limit: int, window: float) -> bool:
        key = "rate:" + key
        count = int(self._live(key) or 0) + 1
        expires = self._values[key][1] if count > 1 else time.monotonic() + window
        self._values[key] = (str(count), expires)
        return count > limit

    async def acquire_lease(self, name: str, owner: str, *, ttl: float) -> bool:
        holder = self._live("lease:" + name)
        if holder not in (None, owner):
            return False
        self._values["lease:" + name] = (owner, time.monotonic() + ttl)
        return True

    async def renew_lease(self, name: str, owner: str, *, ttl: float) -> bool:
        if self._live("lease:" + name) != owner:
            return False
        self._values["lease:" + name] = (owner, time.monotonic() + ttl)
        return True

    async def release_lease(self, name: str, owner: str) -> None:
        if self._live("lease:" + name) == owner:
            del self._values["lease:" + name]

    async def ping(self) -> bool:
        return True

    async def close(self) -> None:
        self._values.clear()


def build_cache(redis_url: str | None) -> RedisCache | LocalCache:
    return RedisCache(redis_url) if redis_url else LocalCache()


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))
