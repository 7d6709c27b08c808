"""Two `gateway serve` processes on one PostgreSQL and one Redis: kill -9 the one holding the poller mid-turn,
and the other answers that turn, exactly once (the first sign was typing: nothing was left to strand), and the next
message; the seconds each took are printed (run with -s)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from tests.conftest import REDIS
from tests.support.cli_process import until_serving
from tests.support.fakes.chat_completions import ChatCompletionsServer, last_user_text, stream_answer
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import free_port

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)

GIVE_UP_AFTER = 60.0
"""Seconds from the kill after which the test stops waiting: a bound on the wait, not the figure. The figures (about
9 to 11 s here, against the README's promise of 15) are printed for the README, not asserted: a timed assertion would
fail on a machine busy enough to be slow, and say nothing about correctness."""


class StallingModel(ChatCompletionsServer):
    """A model server whose first request never answers; later ones stream an echo."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[str] = []
        self.first_arrived = asyncio.Event()
        self._released = asyncio.Event()

    def stop(self) -> None:
        self._released.set()

    async def complete(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(last_user_text(await request.json()))
        if len(self.requests) == 1:
            self.first_arrived.set()
            await self._released.wait()  # the process that asked is killed meanwhile
            return web.Response(status=503)
        return await stream_answer(request, [{"role": "assistant", "content": f"echo: {self.requests[-1]}"}], "stop")


@asynccontextmanager
async def serving(telegram: FakeTelegram, config: Path, env: dict[str, str],
                  port: int) -> AsyncIterator[asyncio.subprocess.Process]:
    """A `gateway serve` process, once it signed its bot in and its readiness probe answers 200."""
    signed_in = sum(c.method == "getMe" for c in telegram.calls)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "serve", "-c", str(config), cwd=config.parent, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await telegram.wait_for(lambda: sum(c.method == "getMe" for c in telegram.calls) > signed_in, timeout=30)
        await until_serving(port)
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_killing_the_replica_holding_the_poller_mid_turn_recovers_within_seconds(
        telegram: FakeTelegram, database_url: str, tmp_path: Path) -> None:
    token = f"{uuid.uuid4().int % 10**9}:{uuid.uuid4().hex}"
    telegram.add_bot(token, username="recovery_bot")
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    ports = [free_port(), free_port()]
    bot_name = f"tg{uuid.uuid4().hex[:10]}"  # the transport lease in the shared Redis is named after it
    async with StallingModel() as model, AsyncExitStack() as stack:
        configs = []
        for port in ports:
            configs.append(tmp_path / f"gateway-{port}.yaml")
            configs[-1].write_text(yaml.safe_dump({
                "models": {"stalling": {"provider": "openai-chat", "base_url": model.url, "model": "stalling"}},
                "agents": [{"name": "helper", "model": "stalling", "instructions": "Be brief."}],
                "bots": [{"name": bot_name, "platform": "telegram",
                          "token": "${TG_TOKEN}", "api_base_url": telegram.url, "agent": "helper",
                          # each message its own answer: a DM's default (`steer`) may hand "two" to the retried turn
                          "binding": {"while_busy": "queue"}}],
                "server": {"host": "127.0.0.1", "port": port},
            }))
        env = {**os.environ, "TG_TOKEN": token, "DATABASE_URL": database_url, "REDIS_URL": REDIS}
        holder = await stack.enter_async_context(serving(telegram, configs[0], env, ports[0]))
        await telegram.user_says(token, chat, alice, "one")
        async with asyncio.timeout(20):
            await model.first_arrived.wait()
        await stack.enter_async_context(serving(telegram, configs[1], env, ports[1]))
        posted_before_the_kill = telegram.bot_messages(chat["id"])
        holder.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        await telegram.user_says(token, chat, alice, "two")
        answered: dict[str, float] = {}

        def note_answers() -> bool:
            for message in telegram.bot_messages(chat["id"]):
                answered.setdefault(message["text"], time.monotonic() - killed)
            return {"echo: one", "echo: two"} <= answered.keys()

        await telegram.wait_for(note_answers, timeout=GIVE_UP_AFTER)
    # The figures README states (run with -s to see them): seconds from the kill to each answer.
    print(f"\nrecovery after kill -9: the crashed turn answered in {answered['echo: one']:.1f} s, "
          f"a message sent after the kill in {answered['echo: two']:.1f} s")
    final: list[dict[str, Any]] = telegram.bot_messages(chat["id"])
    assert [m["text"] for m in final] == ["echo: one", "echo: two"]
    assert posted_before_the_kill == []  # the model had said nothing yet: typing showed the turn at work
    assert model.requests == ["one", "one", "two"]
