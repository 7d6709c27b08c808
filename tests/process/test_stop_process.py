"""Two `gateway serve` processes on one PostgreSQL and one Redis: a slow turn runs on one of them, `stop` is accepted
into the lane beside the conversation, which either may claim, and the turn ends within 2 s with its partial text
marked stopped; the next message is answered as usual. The seconds the stop took are printed (run with -s)."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
import yaml
from aiohttp import web

from gateway.pipeline.turn_control import STOPPING
from tests.conftest import REDIS
from tests.process.test_recovery_process import serving
from tests.support.fakes.chat_completions import (
    ChatCompletionsServer,
    last_user_text,
    open_stream,
    stream_answer,
    write_chunk,
)
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import free_port

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)

STOP_WITHIN = 2.0
"""Seconds from `stop` to the reply marked stopped, as the issue asks."""


class SlowFirstModel(ChatCompletionsServer):
    """The first request streams "thinking about <what was said>" and then holds, the model still working; later
    ones stream an echo."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[str] = []
        self._released = asyncio.Event()

    def stop(self) -> None:
        self._released.set()

    async def complete(self, request: web.Request) -> web.StreamResponse:
        said = last_user_text(await request.json())
        self.requests.append(said)
        if len(self.requests) > 1:
            return await stream_answer(request, [{"role": "assistant", "content": f"echo: {said}"}], "stop")
        response = await open_stream(request)
        await write_chunk(response, {"role": "assistant", "content": f"thinking about {said}"})
        await self._released.wait()  # the gateway cancels the request meanwhile
        return response


async def test_stop_said_to_either_of_two_processes_ends_the_turn_within_two_seconds(
        telegram: FakeTelegram, database_url: str, tmp_path: Path) -> None:
    token = f"{uuid.uuid4().int % 10**9}:{uuid.uuid4().hex}"
    telegram.add_bot(token, username="stop_bot")
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    bot_name = f"tg{uuid.uuid4().hex[:10]}"  # the transport lease in the shared Redis is named after it
    env = {**os.environ, "TG_TOKEN": token, "DATABASE_URL": database_url, "REDIS_URL": REDIS}
    async with SlowFirstModel() as model, AsyncExitStack() as stack:
        for _replica in range(2):
            port = free_port()
            config = tmp_path / f"gateway-{port}.yaml"
            config.write_text(yaml.safe_dump({
                "models": {"slow": {"provider": "openai-chat", "base_url": model.url, "model": "slow"}},
                "agents": [{"name": "helper", "model": "slow", "instructions": "Be brief."}],
                "bots": [{"name": bot_name, "platform": "telegram", "token": "${TG_TOKEN}",
                          "api_base_url": telegram.url, "agent": "helper"}],
                "server": {"host": "127.0.0.1", "port": port},
            }))
            await stack.enter_async_context(serving(telegram, config, env, port))

        def texts() -> list[str]:
            return [m["text"] for m in telegram.bot_messages(chat["id"])]

        await telegram.user_says(token, chat, alice, "write a long story")
        await telegram.wait_for(lambda: any(text.startswith("thinking about")
                                            for text in telegram.drafts.current(chat["id"])), timeout=30)
        await telegram.user_says(token, chat, alice, "stop")
        said = time.monotonic()
        await telegram.wait_for(lambda: any("Stopped" in text for text in texts()), timeout=STOP_WITHIN)
        took = time.monotonic() - said
        await telegram.user_says(token, chat, alice, "hello")
        await telegram.wait_for(lambda: "echo: hello" in texts(), timeout=30)
    print(f"\nstop across two gateway serve processes: the turn ended {took:.2f} s after the word")
    assert sorted(texts()) == sorted([STOPPING, "thinking about write a long story\n\n⏹ Stopped by Alice.",
                                      "echo: hello"])
    assert model.requests == ["write a long story", "hello"]
