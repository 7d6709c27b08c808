"""A TCP proxy on 127.0.0.1 in front of a real server (Redis, PostgreSQL) that a test cuts and restores: cut, every
open connection is closed and new ones are refused, as when the server goes away; restored, it forwards again."""

from __future__ import annotations

import asyncio
import contextlib
import socket


class TcpProxy:
    """Forwards `127.0.0.1:<port>` to `upstream_host:upstream_port` while not cut."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self.port = 0
        self._listener = self._bound()
        """Bound for the proxy's whole life, so no other server takes the port while it is cut."""
        self.port = int(self._listener.getsockname()[1])
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pipes: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> TcpProxy:
        await self.restore()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.cut()
        self._listener.close()

    async def restore(self) -> None:
        """Accept and forward connections again."""
        if self._server is None:
            self._listener.listen()
            self._server = await asyncio.start_server(self._connect, sock=self._listener)

    async def cut(self) -> None:
        """Close every forwarded connection and refuse new ones (the bound port no longer listens)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for pipe in list(self._pipes):
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)
        if server is not None:
            await server.wait_closed()
            # A closed asyncio server closes its socket; a fresh one keeps the port bound and not listening.
            self._listener = self._bound()

    def _bound(self) -> socket.socket:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the cut connections' port is taken again
        sock.bind(("127.0.0.1", self.port))
        return sock

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        pipes = {asyncio.create_task(self._pipe(reader, up_writer)), asyncio.create_task(self._pipe(up_reader, writer))}
        self._pipes |= pipes
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for end in (writer, up_writer):
                end.transport.abort()
                self._writers.discard(end)
            for pipe in pipes:
                pipe.cancel()
            self._pipes -= pipes

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
