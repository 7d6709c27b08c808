"""`/readyz` takes a replica out only for what makes it useless; a bot that cannot connect is named, not fatal."""

from __future__ import annotations

import logging

import httpx
import pytest

from storage.redis_cache import FallbackCache, RedisCache
from tests.e2e.test_metrics import samples, scrape
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask, refused_port, running_gateway
from tests.support.scripted import echoes


async def test_a_revoked_token_is_reported_and_the_replica_keeps_serving(
        telegram: FakeTelegram, sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    working = TelegramBot().register(telegram)
    revoked = TelegramBot()  # never registered: the fake refuses its token, as Telegram does a revoked one
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    with caplog.at_level(logging.ERROR, logger="gateway.server.supervisor"):
        async with running_gateway(telegram, [working, revoked], database_url=sqlite_url, redis_url=None,
                                   model=echoes()) as gateway:
            async with httpx.AsyncClient() as client:
                ready = await client.get(f"{gateway.url}/readyz")
            answer = await ask(telegram, working, chat, alice, "still there?")
            found = samples(await scrape(gateway.url))
    assert (ready.status_code, ready.json()) == (200, {
        "ready": True, "status": "ok", "degraded": {}, "checks": {"database": True},
        "bots": {working.name: True, revoked.name: False}})
    for bot, signed_in in ((working, 1), (revoked, 0)):
        labels = frozenset({("bot", bot.name), ("platform", "telegram")})
        assert found[("gateway_bot_signed_in", labels)] == signed_in, bot.name
        assert found[("gateway_transport_connected", labels)] == signed_in, bot.name
    assert answer == "echo: still there?"
    assert [r.getMessage() for r in caplog.records if revoked.name in r.getMessage()] != []


async def test_an_unreachable_redis_is_one_log_line_however_often_it_is_asked(
        caplog: pytest.LogCaptureFixture) -> None:
    """Every call asks Redis again (no pause between probes), as calls do over an outage longer than the pause."""
    with refused_port() as port, caplog.at_level(logging.WARNING):
        cache = FallbackCache(RedisCache(f"redis://127.0.0.1:{port}/0"), probe_interval=0)
        try:
            limited = [await cache.hit_rate_limit("bot:alice", limit=5, window=60) for _ in range(3)]
            pings = [await cache.ping() for _ in range(3)]
        finally:
            await cache.close()
    assert (limited, pings) == ([False] * 3, [False] * 3)
    assert len([r for r in caplog.records if "unreachable" in r.getMessage()]) == 1
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
