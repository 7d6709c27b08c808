"""An aiohttp application served on loopback for as long as a block runs: what every fake server here stands on."""

from __future__ import annotations

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
