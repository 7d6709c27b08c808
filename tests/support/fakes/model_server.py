"""An OpenAI-compatible chat-completions server on 127.0.0.1 that misbehaves on purpose: it holds a request open
and never answers, sends one chunk and then nothing, or answers an error status with OpenAI's error body."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from contextlib import AsyncExitStack, ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web
from pydantic_ai.models import override_allow_model_requests

from tests.support.loopback import serving

Behaviour = Literal["stall", "stall_after_first_chunk", "error"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """An error answer: the status and OpenAI's `error` object (`code`, `type`, `message`)."""

    status: int
    code: str | None = None
    type: str = "invalid_request_error"
    message: str = "refused"

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": None, "code": self.code}}


class FakeModelServer:
    """`behaviour` for every request to `/v1/chat/completions`; `requests` counts them (retries included)."""

    def __init__(self, behaviour: Behaviour, *, refusal: Refusal | None = None) -> None:
        self.behaviour = behaviour
        self.refusal = refusal
        self.requests = 0
        self.held = 0
        """Requests answered with nothing more (yet): each waits until the server stops."""
        self._stopping = asyncio.Event()
        self._server = AsyncExitStack()
        self.url = ""

    async def __aenter__(self) -> FakeModelServer:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        # The suite forbids real model requests; requests to this server, on loopback, are the point.
        self._server.enter_context(override_allow_model_requests(True))
        self.url = f"{await self._server.enter_async_context(serving(app))}/v1"
        return self

    async def __aexit__(self, *_: object) -> None:
        self._stopping.set()
        await self._server.aclose()

    def profile(self, **deadlines: float) -> dict[str, Any]:
        """A `models:` profile for this server, with `deadlines` when given."""
        return {"provider": "openai-chat", "base_url": self.url, "model": "stalling",
                **({"deadlines": deadlines} if deadlines else {})}

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.requests += 1
        if self.behaviour == "error":
            assert self.refusal is not None
            return web.json_response(self.refusal.body(), status=self.refusal.status)
        if self.behaviour == "stall":
            return await self._hold(web.Response(status=503))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "stalling",
                 "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me think"},
                              "finish_reason": None}]}
        await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        return await self._hold(response)

    async def _hold(self, response: web.StreamResponse) -> web.StreamResponse:
        self.held += 1
        await self._stopping.wait()
        return response


@contextmanager
def unconnectable_url() -> Iterator[str]:
    """A loopback `/v1` URL whose server never completes a connection: its listen queue is full and nothing
    accepts, so the kernel drops each further SYN and the client waits, as on a blackholed network."""
    with ExitStack() as stack:
        listener = stack.enter_context(socket.socket())
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        for _ in range(3):  # more than the queue holds
            filler = stack.enter_context(socket.socket())
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        yield f"http://127.0.0.1:{port}/v1"
