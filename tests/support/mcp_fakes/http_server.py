"""The issues MCP server over streamable HTTP on 127.0.0.1, behind a bearer token, for the tests."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import uvicorn

from tests.support.mcp_fakes.issues_server import issues_server

TOKEN = "mcp-test-token-4f9c2e"


def bearer_only(app: Any, token: str) -> Any:
    """An ASGI app that answers 401 to any HTTP request without `Authorization: Bearer <token>`."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "http" and headers.get(b"authorization") != f"Bearer {token}".encode():
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)
    return guarded


@asynccontextmanager
async def http_mcp_server(host: str = "127.0.0.1") -> AsyncIterator[str]:
    """The server's URL while it runs; the socket is bound first, so the URL is good before uvicorn starts. `host`:
    the name the server answers to in the Host header (it listens on 127.0.0.1 whatever the name)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    app = bearer_only(issues_server().streamable_http_app(host=host), TOKEN)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await task
        sock.close()


@contextmanager
def http_mcp_server_in_thread() -> Iterator[str]:
    """The same server on a thread of its own, so one can serve a whole test module (each test has its own loop)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    app = bearer_only(issues_server().streamable_http_app(host="127.0.0.1"), TOKEN)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
