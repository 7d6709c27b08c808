"""Short-lived shared state: rate-limit windows and leases. Redis (`storage/redis_cache.py`, loaded only by a
gateway that has a `REDIS_URL`), or process memory for one process."""

from __future__ import annotations

import sys
import time
from typing import Protocol

REDIS_UNAVAILABLE_NAMES = ("ConnectionError", "TimeoutError", "ReadOnlyError")
"""What Redis raises when it cannot serve us (down, loading after a restart, a replica mid-failover, a partition),
as opposed to a bad command: `redis.exceptions`' classes of these names."""


def is_cache_outage(exc: BaseException) -> bool:
    """Redis could not serve a call. Asked of Redis's own exception classes only once its client is loaded: before
    that, no exception of Redis's can exist."""
    errors = sys.modules.get("redis.exceptions")
    return errors is not None and isinstance(exc, tuple(getattr(errors, name) for name in REDIS_UNAVAILABLE_NAMES))


class Cache(Protocol):
    async def set_if_absent(self, key: str, value: str, *, ttl: float) -> bool: ...

    async def hit_rate_limit(self, key: str, *, limit: int, window: float) -> bool:
        """Count one event in a fixed window; True when it is over the limit."""
        ...

    async def acquire_lease(self, name: str, owner: str, *, ttl: float) -> bool: ...

    async def renew_lease(self, name: str, owner: str, *, ttl: float) -> bool: ...

    async def release_lease(self, name: str, owner: str) -> None: ...

    async def close(self) -> None: ...


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

    def hold(self, name: str, holder: str, *, ttl: float) -> None:
        """Record `holder` as the lease's holder for `ttl`, whoever held it before."""
        self._values["lease:" + name] = (holder, time.monotonic() + ttl)

    async def ping(self) -> bool:
        return True

    async def close(self) -> None:
        self._values.clear()
