"""An OpenAI-compatible `/v1/chat/completions` endpoint on loopback, for tests whose `gateway serve` process talks
to a model over HTTP: a subclass decides each answer in `complete`, and streams it with the helpers below."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any, Self

from aiohttp import web

from tests.support.loopback import serving


class ChatCompletionsServer:
    """Serves `complete` at `{url}/chat/completions` while the block runs; `url` ends in `/v1`, as `base_url` does."""

    def __init__(self) -> None:
        self._server = AsyncExitStack()
        self.url = ""

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.complete)
        self.url = f"{await self._server.enter_async_context(serving(app))}/v1"
        return self

    async def __aexit__(self, *_: object) -> None:
        self.stop()
        await self._server.aclose()

    def stop(self) -> None:
        """Runs before the server closes: a subclass lets go of the requests it holds open here."""

    async def complete(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError


def last_user_text(body: dict[str, Any]) -> str:
    """What the person said last, as text (a list of parts as its JSON)."""
    said = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    return said if isinstance(said, str) else json.dumps(said)


async def open_stream(request: web.Request) -> web.StreamResponse:
    """A server-sent-events answer, headers sent."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    return response


async def write_chunk(response: web.StreamResponse, delta: dict[str, Any], finish: str | None = None) -> None:
    """One `chat.completion.chunk` event carrying `delta`."""
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "loopback",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    await response.write(f"data: {json.dumps(chunk)}\n\n".encode())


async def stream_answer(request: web.Request, deltas: list[dict[str, Any]], finish: str) -> web.StreamResponse:
    """A whole streamed answer: each delta, the finish reason, then `[DONE]`."""
    response = await open_stream(request)
    for delta in deltas:
        await write_chunk(response, delta)
    await write_chunk(response, {}, finish)
    await response.write(b"data: [DONE]\n\n")
    return response
