"""An aiohttp application served on loopback for as long as a block runs: what every fake server here stands on."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def serving(app: web.Application, *, ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    """Serves `app` on 127.0.0.1 at a port the OS picks; yields its base URL, `http://127.0.0.1:PORT` (https with
    `ssl_context`)."""
    runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context).start()
        host, port = runner.addresses[0][:2]
        yield f"{'https' if ssl_context else 'http'}://{host}:{port}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def counting_listener() -> AsyncIterator[tuple[int, list[int]]]:
    """A loopback port and the count of connections offered to it: where a refused fetch must never arrive."""
    seen: list[int] = []

    def accepted(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(1)
        writer.close()

    server = await asyncio.start_server(accepted, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], seen
    finally:
        server.close()
