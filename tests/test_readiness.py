"""`/readyz` takes a replica out only for what makes it useless; a bot that cannot connect is named, not fatal."""

from __future__ import annotations

import logging

import httpx
import pytest

from tests.fakes.telegram import FakeTelegram
from tests.harness import TelegramBot, ask, running_gateway
from tests.test_metrics import samples, scrape
from tests.scripted import echoes


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
        "ready": True, "checks": {"database": True}, "bots": {working.name: True, revoked.name: False}})
    for bot, signed_in in ((working, 1), (revoked, 0)):
        labels = frozenset({("bot", bot.name), ("platform", "telegram")})
        assert found[("gateway_bot_signed_in", labels)] == signed_in, bot.name
        assert found[("gateway_transport_connected", labels)] == signed_in, bot.name
    assert answer == "echo: still there?"
    assert [r.getMessage() for r in caplog.records if revoked.name in r.getMessage()] != []
