"""A loopback HTTP proxy that lets a browser reach only addresses the URL guard checked: `browser_use`'s egress.

The browser engine runs in a process of its own, so the gateway cannot check the pages it loads in its HTTP
client; instead each browse task is handed the URL of one of these proxies, open for that task, and the engine
sends every request of its browser through it (`--proxy-server`, with `--proxy-bypass-list=<-loopback>` so that
loopback is not exempt). A `CONNECT host:port` is tunnelled, and an absolute-form request (`GET http://host/...`)
forwarded, to an address `capabilities/run/url_guard.py` resolved and checked, never to the name; a refused one is
answered `403` and nothing is connected. A forwarded connection stays with the address it was opened to.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from capabilities.run.url_guard import Refused, Resolver, checked_addresses

_HEAD_LIMIT = 65_536


class GuardedProxy:
    def __init__(self, resolver: Resolver, *, allow_private: bool = False) -> None:
        self._resolver = resolver
        self._allow_private = allow_private
        self.refused: list[str] = []
        """The targets refused, as asked (`host:port`), for the engine's report and the logs."""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > _HEAD_LIMIT:
                raise ValueError("head too long")
            method, target, _version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            tunnel = method.upper() == "CONNECT"
            host, port, first = _destination(target) if tunnel else _forwarded(method, target, head)
            upstream = await self._open(host, port)
        except Exception as exc:  # a browser's malformed request or a failing lookup: answered, never a dead proxy
            await _answer(writer, b"403 Forbidden" if isinstance(exc, Refused) else b"502 Bad Gateway")
            return
        up_reader, up_writer = upstream
        if tunnel:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            up_writer.write(first)
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    async def _open(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            addresses = await checked_addresses(host, self._resolver, trusted=self._allow_private)
        except Refused:
            self.refused.append(f"{host}:{port}")
            raise
        return await asyncio.open_connection(str(addresses[0]), port)


def _destination(target: str) -> tuple[str, int, bytes]:
    host, _, port = target.rpartition(":")
    return host.strip("[]"), int(port), b""


def _forwarded(method: str, target: str, head: bytes) -> tuple[str, int, bytes]:
    """An absolute-form request's host and port, and its head in origin form for the server."""
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError("only http:// requests are forwarded; https goes through CONNECT")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    rest = head.split(b"\r\n", 1)[1]
    return parts.hostname, parts.port or 80, f"{method} {path} HTTP/1.1\r\n".encode("latin-1") + rest


async def _answer(writer: asyncio.StreamWriter, status: bytes) -> None:
    writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while chunk := await source.read(65_536):
            sink.write(chunk)
            await sink.drain()
    except ConnectionError:
        pass
    finally:
        sink.close()


@asynccontextmanager
async def guarded_proxy(resolver: Resolver, *,
                        allow_private: bool = False) -> AsyncGenerator[tuple[str, GuardedProxy], None]:
    """A proxy on a loopback port for as long as the block runs: its URL, and the proxy."""
    proxy = GuardedProxy(resolver, allow_private=allow_private)
    server = await asyncio.start_server(proxy.serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", proxy
    finally:
        server.close()
