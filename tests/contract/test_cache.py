"""One contract for both caches: real Redis and the single-process fallback."""

from __future__ import annotations

import time
import uuid

from storage.cache import LocalCache
from storage.redis_cache import RedisCache
from tests.conftest import REDIS


async def test_set_if_absent_admits_once(cache: RedisCache | LocalCache) -> None:
    assert await cache.set_if_absent("k", "1", ttl=30) is True
    assert await cache.set_if_absent("k", "2", ttl=30) is False


async def test_rate_limit_counts_within_the_window(cache: RedisCache | LocalCache) -> None:
    over = [await cache.hit_rate_limit("bot:user", limit=3, window=30) for _ in range(5)]
    assert over == [False, False, False, True, True]
    assert await cache.hit_rate_limit("bot:other", limit=3, window=30) is False


async def test_lease_has_one_holder_until_released(cache: RedisCache | LocalCache) -> None:
    assert await cache.acquire_lease("transport:bot", "replica-a", ttl=30) is True
    assert await cache.acquire_lease("transport:bot", "replica-b", ttl=30) is False
    assert await cache.renew_lease("transport:bot", "replica-b", ttl=30) is False
    assert await cache.renew_lease("transport:bot", "replica-a", ttl=30) is True
    await cache.release_lease("transport:bot", "replica-b")  # not the holder: no effect
    assert await cache.acquire_lease("transport:bot", "replica-b", ttl=30) is False
    await cache.release_lease("transport:bot", "replica-a")
    assert await cache.acquire_lease("transport:bot", "replica-b", ttl=30) is True


async def test_an_expired_lease_can_be_taken_over(cache: RedisCache | LocalCache) -> None:
    assert await cache.acquire_lease("transport:bot", "replica-a", ttl=0.05) is True
    deadline = time.monotonic() + 2  # the holder died: once its lease runs out, another replica takes it
    while not await cache.acquire_lease("transport:bot", "replica-b", ttl=30):
        assert time.monotonic() < deadline, "the lease never ran out"
    assert await cache.renew_lease("transport:bot", "replica-a", ttl=30) is False


async def test_two_replicas_share_one_redis_count() -> None:
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    first, second = RedisCache(REDIS, prefix=prefix), RedisCache(REDIS, prefix=prefix)
    try:
        over = [await replica.hit_rate_limit("bot:user", limit=2, window=30) for replica in (first, second, first)]
    finally:
        await first.close()
        await second.close()
    assert over == [False, False, True]
