"""Mattermost's event stream (`/api/v4/websocket`), over the `websockets` library directly.

mattermostdriver's `Websocket.connect` is not used: it reconnects by itself inside a bare `except`
(logging and sleeping, never raising), so a supervisor could neither see a dropped connection nor
catch up after it; and `Driver.init_websocket` calls `run_until_complete`, which cannot run inside
a running loop. REST calls still go through the driver (`adapters/mattermost/rest.py`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from adapters.base import MalformedPayload
from adapters.wire import is_object, read_json_object, unreadable_frame

PING_INTERVAL = 20.0
"""Keepalive: a connection that stops answering pings (a TCP reset, a dead proxy) ends within ~40 s."""
PING_TIMEOUT = 20.0
OPEN_TIMEOUT = 15.0
MAX_FRAME = 8 * 1024 * 1024
MAX_QUEUE = 1024
"""Frames buffered while the adapter catches up; keeps reading (and answering pings) meanwhile."""


class SocketRefused(Exception):
    """The server refused the authentication challenge."""


class EventStream:
    """One authenticated connection; events are the server's JSON objects."""

    def __init__(self, socket: ClientConnection) -> None:
        self._socket = socket

    async def next_event(self, *, idle: float) -> dict[str, Any] | None:
        """The next event; None after `idle` quiet seconds (the connection is still up, or pings would end it).

        A frame that is not a JSON object comes back as the record of an unreadable frame (`adapters/wire.py`).

        Raises `websockets.ConnectionClosed` when the connection ends.
        """
        try:
            async with asyncio.timeout(idle):
                frame = await self._socket.recv()
        except TimeoutError:
            return None
        try:
            return read_json_object(frame, "event stream frame")
        except MalformedPayload as exc:
            return unreadable_frame(frame, str(exc))


@asynccontextmanager
async def event_stream(url: str, token: str) -> AsyncGenerator[EventStream, None]:
    """Connect, answer the authentication challenge, and hold the connection open."""
    async with connect(url, open_timeout=OPEN_TIMEOUT, ping_interval=PING_INTERVAL, ping_timeout=PING_TIMEOUT,
                       close_timeout=2.0, max_size=MAX_FRAME, max_queue=MAX_QUEUE) as socket:
        await _authenticate(socket, token)
        yield EventStream(socket)


async def _authenticate(socket: ClientConnection, token: str) -> None:
    """Send the challenge; done at its `OK` reply or at `hello` (sent only to authenticated connections)."""
    await socket.send(json.dumps({"seq": 1, "action": "authentication_challenge", "data": {"token": token}}))
    async with asyncio.timeout(OPEN_TIMEOUT):
        while True:
            try:
                reply = read_json_object(await socket.recv(), "authentication reply")
            except MalformedPayload:
                continue
            if reply.get("seq_reply") == 1:
                if reply.get("status") == "OK":
                    return
                error: Mapping[str, Any] = found if is_object(found := reply.get("error")) else {}
                raise SocketRefused(f"authentication challenge refused ({error.get('id') or reply.get('status')})")
            if reply.get("event") == "hello":
                return
