"""A replica that serves without Redis (the in-process fallback) stays Ready and says it is degraded, in `/readyz`
and in `gateway_degraded`; only the database going away takes it out. Each outage is made at the network boundary,
by cutting a TCP proxy in front of the real server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpx
import pytest
import pytest_asyncio

from gateway.agents.models import ModelResolver
from gateway.config.schema import Settings
from gateway.config.secrets import SecretSource
from gateway.server.app import Gateway
from tests.conftest import REDIS
from tests.deploy.test_kubernetes_manifests import by_kind, rendered
from tests.e2e.test_metrics import samples, scrape
from tests.support.fakes.tcp_proxy import TcpProxy
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import FAST, TelegramBot, ask, gateway_config, running_gateway
from tests.support.scripted import echoes

REDIS_SERIES = ("gateway_degraded", frozenset({("reason", "redis")}))


@pytest_asyncio.fixture
async def redis_proxy() -> AsyncIterator[TcpProxy]:
    upstream = urlsplit(REDIS)
    async with TcpProxy(upstream.hostname or "127.0.0.1", upstream.port or 6379) as proxy:
        yield proxy


def through(proxy: TcpProxy, url: str) -> str:
    """`url` with its host and port replaced by the proxy's."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@127.0.0.1:{proxy.port}" if credentials else f"127.0.0.1:{proxy.port}"
    return parts._replace(netloc=netloc).geturl()


async def probe(url: str, path: str = "/readyz") -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.get(f"{url}{path}")


async def test_a_redis_outage_keeps_the_replica_ready_and_degraded(telegram: FakeTelegram, sqlite_url: str,
                                                                   redis_proxy: TcpProxy) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=through(redis_proxy, REDIS),
                               model=echoes()) as gateway:
        before = await probe(gateway.url)
        shared = samples(await scrape(gateway.url))[REDIS_SERIES]
        await redis_proxy.cut()
        during = await probe(gateway.url)
        cut = samples(await scrape(gateway.url))[REDIS_SERIES]
        answer = await ask(telegram, bot, chat, alice, "still there?")
        await redis_proxy.restore()
        async with asyncio.timeout(10):  # the client's pooled connections were cut: a probe or two reconnects
            while (after := await probe(gateway.url)).json()["status"] != "ok":
                pass
        back = samples(await scrape(gateway.url))[REDIS_SERIES]
    assert (before.status_code, before.json()["status"], before.json()["degraded"]) == (200, "ok", {})
    assert (during.status_code, during.json()["ready"], during.json()["status"]) == (200, True, "degraded")
    assert list(during.json()["degraded"]) == ["redis"]
    assert "Redis does not answer" in during.json()["degraded"]["redis"]
    assert during.json()["checks"] == {"database": True, "cache": False}
    assert answer == "echo: still there?"
    assert after.status_code == 200
    assert (shared, cut, back) == (0, 1, 0)


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_an_unreachable_database_takes_the_replica_out(telegram: FakeTelegram, database_url: str) -> None:
    upstream = urlsplit(database_url)
    bot = TelegramBot().register(telegram)
    proxy = TcpProxy(upstream.hostname or "127.0.0.1", upstream.port or 5432)
    async with proxy, running_gateway(telegram, [bot], database_url=through(proxy, database_url), redis_url=None,
                                      model=echoes()) as gateway:
        await proxy.cut()
        down = await probe(gateway.url)
        await proxy.restore()
    assert (down.status_code, down.json()["ready"], down.json()["status"]) == (503, False, "unavailable")
    assert down.json()["checks"] == {"database": False}


async def test_the_production_readiness_probe_keeps_a_replica_without_redis_in_rotation(
        telegram: FakeTelegram, sqlite_url: str, redis_proxy: TcpProxy) -> None:
    """What the production overlay's kubelet asks, asked of a replica whose Redis is cut: a 2xx or 3xx keeps the
    pod Ready, so the Ingress keeps routing webhooks and approval clicks to it."""
    [deployment] = by_kind(rendered("production"), "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    readiness = container["readinessProbe"]["httpGet"]
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=through(redis_proxy, REDIS),
                               model=echoes()) as gateway:
        await redis_proxy.cut()
        answers = [await probe(gateway.url, readiness["path"])
                   for _ in range(container["readinessProbe"]["failureThreshold"])]
    assert readiness["path"] == "/readyz"
    assert [(a.status_code, a.json()["status"]) for a in answers] == [(200, "degraded")] * len(answers)


async def test_a_replica_with_no_bot_signed_in_cannot_accept_and_is_not_ready(telegram: FakeTelegram,
                                                                            sqlite_url: str) -> None:
    """Its only bot's token refused (revoked): no transport runs and no webhook could be verified."""
    revoked = TelegramBot()  # never registered: the fake refuses its token
    config = gateway_config(telegram, [revoked])
    secrets = SecretSource(environ={f"TOKEN_{revoked.name.upper()}": revoked.token})
    models = ModelResolver(config.models, secrets, fixed={"function:scripted": echoes()})
    async with Gateway(config, Settings(database_url=sqlite_url, redis_url=None), secrets=secrets, models=models,
                       tuning=FAST, migrate=True) as gateway:
        await telegram.wait_for(lambda: any(c.method == "getMe" and c.token == revoked.token for c in telegram.calls))
        answer = await probe(gateway.url)
    assert (answer.status_code, answer.json()["status"], answer.json()["bots"]) == (
        503, "unavailable", {revoked.name: False})
