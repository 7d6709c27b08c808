"""Redis, PostgreSQL or the platform blink: every message is still answered exactly once, and nothing is marked
failed."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Iterator

import httpx
import psycopg
import pytest
import pytest_asyncio
import redis.asyncio as redis
from pydantic_ai.models.function import FunctionModel

from tests.conftest import POSTGRES
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, free_port, running_gateway
from tests.support.records import inbox_rows
from tests.support.scripted import echoes

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


class OwnRedis:
    """A Redis server of this test's own, on a free port, that the test stops and starts again."""

    def __init__(self) -> None:
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        self._process = subprocess.Popen(  # noqa: ASYNC220 - starting a process does not block for long
            ["redis-server", "--port", str(self.port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.from_url(self.url)
        try:
            async with asyncio.timeout(5):
                while True:
                    try:
                        await client.ping()
                        return
                    except redis.ConnectionError:
                        await asyncio.sleep(0.05)  # the server is still binding its port
        finally:
            await client.aclose()

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=5)
            self._process = None


@pytest_asyncio.fixture
async def own_redis() -> AsyncIterator[OwnRedis]:
    server = OwnRedis()
    await server.start()
    try:
        yield server
    finally:
        server.stop()


def answers_in(telegram: FakeTelegram, chat_id: int) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat_id)]


async def readiness(url: str) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.get(f"{url}/readyz")


async def test_a_redis_outage_loses_no_message(telegram: FakeTelegram, database_url: str, own_redis: OwnRedis,
                                               caplog: pytest.LogCaptureFixture) -> None:
    # queued, not steered: each message sent in a burst has an answer of its own to count
    bot = TelegramBot(binding={"rate_limit": {"messages": 20, "per_seconds": 60},
                               "while_busy": "queue"}).register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=own_redis.url,
                               model=echoes()) as gateway:
        await telegram.user_says(bot.token, chat, alice, "before")
        await telegram.wait_for(lambda: answers_in(telegram, chat["id"]) == ["echo: before"])
        own_redis.stop()
        with caplog.at_level(logging.WARNING):
            for n in range(3):
                await telegram.user_says(bot.token, chat, alice, f"during {n}")
            await telegram.wait_for(lambda: answers_in(telegram, chat["id"])[1:] == [
                "echo: during 0", "echo: during 1", "echo: during 2"], timeout=15)
            probes = [await readiness(gateway.url) for _ in range(3)]
        await own_redis.start()
        for n in range(2):
            await telegram.user_says(bot.token, chat, alice, f"after {n}")
        await telegram.wait_for(lambda: answers_in(telegram, chat["id"])[4:] == ["echo: after 0", "echo: after 1"],
                                timeout=15)
    assert [(down.status_code, down.json()["status"], down.json()["checks"]["cache"]) for down in probes] == [
        (200, "degraded", False)] * 3  # still serving: it stays in rotation (tests/e2e/test_degraded_readiness.py)
    assert len([r for r in caplog.records if "unreachable" in r.getMessage()]) == 1, "one line, not one per probe"
    assert [r.getMessage() for r in caplog.records if r.exc_info] == [], "and no traceback"
    assert [row.status for row in await inbox_rows(database_url)] == ["done"] * 6


def _terminate(application_name: str) -> int:
    """End every server process of the gateway's connections, as a PostgreSQL restart would."""
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                             (application_name,)).fetchall()
    return len(rows)


@pytest.fixture
def named_database_url(database_url: str) -> Iterator[tuple[str, str]]:
    """The test's schema, with an application name that picks out the gateway's connections."""
    name = f"gw-{uuid.uuid4().hex[:12]}"
    yield f"{database_url}&application_name={name}", name


async def test_a_postgresql_restart_loses_and_doubles_no_message(telegram: FakeTelegram,
                                                                 named_database_url: tuple[str, str]) -> None:
    database_url, application_name = named_database_url
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    terminated: list[int] = []

    async def ends_the_database_mid_turn(messages, _info):
        terminated.append(_terminate(application_name))  # mid-turn: the run row is open, the answer not yet stored
        yield "echo: " + str(len(terminated))

    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=FunctionModel(stream_function=ends_the_database_mid_turn)):
        for n in range(3):
            await telegram.user_says(bot.token, chat, alice, f"message {n}")
            await telegram.wait_for(lambda n=n: len(answers_in(telegram, chat["id"])) == n + 1
                                    and not answers_in(telegram, chat["id"])[-1].endswith("…"), timeout=15)
            _terminate(application_name)  # between turns too: the pool then holds only dead connections
    assert answers_in(telegram, chat["id"]) == ["echo: 1", "echo: 2", "echo: 3"]
    assert all(count > 0 for count in terminated)
    assert [row.status for row in await inbox_rows(database_url)] == ["done"] * 3


async def test_a_platform_unreachable_mid_turn_is_waited_out_and_the_reply_edited(database_url: str) -> None:
    telegram = FakeTelegram(port=free_port())  # the same port again after the restart
    async with telegram:
        bot = TelegramBot().register(telegram)
        alice = telegram.add_user(1001, "Alice")
        chat = telegram.private_chat(alice)
        calls: list[str] = []
        restarted: list[asyncio.Task[None]] = []

        async def down_while_answering(messages, _info):
            calls.append("model")
            if len(calls) == 1:  # the placeholder is posted; Telegram goes away before the answer is
                await telegram.stop()
                restarted.append(asyncio.create_task(_after(1.5, telegram.start())))
            yield "echo: " + str(len(calls))

        async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                                   model=FunctionModel(stream_function=down_while_answering)):
            await telegram.user_says(bot.token, chat, alice, "hi")
            await telegram.wait_for(lambda: answers_in(telegram, chat["id"]) == [f"echo: {len(calls)}"]
                                    and len(calls) > 1, timeout=15)
    # One message, the first attempt's placeholder edited; the retries while Telegram was away spent no attempt.
    assert [(row.status, row.failures) for row in await inbox_rows(database_url)] == [("done", 0)]


async def _after(delay: float, work: Awaitable[None]) -> None:
    await asyncio.sleep(delay)
    await work
