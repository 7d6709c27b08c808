"""One Slack Socket Mode connection: envelopes in, each acknowledged only after it was handled.

The protocol (https://docs.slack.dev/apis/events-api/using-socket-mode): `apps.connections.open`
with the app-level token gives a one-time `wss://` URL; the server greets with `hello`, then sends
envelopes `{"envelope_id", "type": "events_api" | "interactive" | "slash_commands", "payload"}`,
each of which must be answered with `{"envelope_id"}` within 3 seconds, or it is sent again later.
`disconnect` announces the end of a connection; a `refresh_requested` one is reconnected at once.
Reconnecting after a failure (with backoff) belongs to the supervisor.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, cast

import aiohttp

from adapters.base import Deliver, MalformedPayload, PlatformConfigError
from adapters.wire import InOrder, is_object, read_json_object, unreadable_frame

log = logging.getLogger(__name__)

HEARTBEAT = 30.0
"""Seconds between our pings; a connection whose pong does not come back is closed."""
PAYLOAD_TYPES = frozenset({"events_api", "interactive", "slash_commands"})

Handle = Callable[[Mapping[str, Any]], Awaitable[None]]


class SocketMode:
    """Socket Mode for one bot: each envelope is acknowledged after `deliver` committed it."""

    def __init__(self, *, bot_id: str, connect: Callable[[], Awaitable[str]],
                 session: Callable[[], aiohttp.ClientSession],
                 annotate: Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any]]]) -> None:
        """`connect` opens a one-time socket URL; `annotate` adds the names of a payload's people."""
        self._bot_id = bot_id
        self._connect = connect
        self._session = session
        self._annotate = annotate

    async def run_transport(self, deliver: Deliver) -> None:
        async def handle(payload: Mapping[str, Any]) -> None:
            await deliver(await self._annotate(payload))

        while True:
            url = await self._connect()
            try:
                reason = await hold_socket(self._session(), url, handle, bot_id=self._bot_id)
            except SocketModeRefused as exc:
                raise PlatformConfigError(f"slack bot {self._bot_id!r}: {exc}") from None
            if reason != "refresh_requested":
                raise ConnectionError(f"slack closed the Socket Mode connection of bot {self._bot_id!r} ({reason})")
            log.info("slack asked bot %r to reconnect its socket; reconnecting", self._bot_id)


class SocketModeRefused(Exception):
    """Slack ended the connection for good (Socket Mode turned off for the app)."""


async def hold_socket(session: aiohttp.ClientSession, url: str, handle: Handle, *, bot_id: str) -> str:
    """Read envelopes until the connection ends; returns why: a `disconnect` reason, or "closed".

    `handle` receives each envelope's payload; the acknowledgement is sent only after it returned, so an
    envelope whose handling failed (the exception ends the connection) is redelivered by Slack. Envelopes of
    different channels are handled at once, those of one channel in the order they came (`InOrder`), so one
    slow commit does not hold up every acknowledgement behind it.

    Raises:
        SocketModeRefused: Slack disabled Socket Mode for the app (`link_disabled`).
    """
    # The first failure ends the connection: nothing after it is acknowledged.
    async with session.ws_connect(url, heartbeat=HEARTBEAT, autoping=True) as socket, InOrder() as order:
        return await _read(socket, order, handle, bot_id)


async def _read(socket: aiohttp.ClientWebSocketResponse, order: InOrder, handle: Handle, bot_id: str) -> str:
    async for message in socket:
        if message.type == aiohttp.WSMsgType.ERROR:
            return f"error: {socket.exception()}"
        if message.type != aiohttp.WSMsgType.TEXT:
            continue
        try:
            envelope = read_json_object(message.data, "socket mode frame")
        except MalformedPayload as exc:  # kept as rejected, its id acknowledged if one can be read, and read on
            await order.submit("", partial(_reject_and_ack, socket, handle, unreadable_frame(message.data, str(exc)),
                                           _envelope_id_of(message.data)))
            continue
        reason = await _dispatch(socket, message.data, envelope, handle, order, bot_id)
        if reason is not None:
            return reason
    return "closed"


async def _dispatch(socket: aiohttp.ClientWebSocketResponse, frame: str, envelope: Mapping[str, Any],
                    handle: Handle, order: InOrder, bot_id: str) -> str | None:
    """Handle one frame; a `disconnect` frame's reason ends the connection.

    Every field is read as untrusted: nothing of the frame is compared, hashed or used as a key before its type
    is checked. An envelope that cannot be read (an id, type or payload of the wrong type) is handed on as
    unreadable, so it is kept as rejected, and its id, when it has one, is acknowledged like any other:
    unacknowledged, Slack would send it again and again.
    """
    kind, envelope_id, payload = envelope.get("type"), envelope.get("envelope_id"), envelope.get("payload")
    if kind == "hello":
        log.info("slack socket mode connected for bot %r", bot_id)
    elif kind == "disconnect":
        reason = envelope.get("reason")
        if reason == "link_disabled":
            raise SocketModeRefused("Socket Mode is turned off for this Slack app; turn it on, or use transport: http")
        return reason if isinstance(reason, str) and reason else "disconnect"
    elif (problem := unreadable_envelope(kind, envelope_id, payload)) is not None:
        await order.submit(_channel_of(payload), partial(_reject_and_ack, socket, handle,
                                                         unreadable_frame(frame, problem), envelope_id))
    elif kind in PAYLOAD_TYPES:
        # `unreadable_envelope` found a string id and an object payload: pyright does not follow that check
        await order.submit(_channel_of(payload), partial(_handle_and_ack, socket, handle,
                                                         cast(Mapping[str, Any], payload), cast(str, envelope_id)))
    else:  # an envelope type this gateway does not know: nothing in it is for the bot
        await order.submit("", partial(_acknowledge, socket, cast(str, envelope_id)))
    return None


def unreadable_envelope(kind: Any, envelope_id: Any, payload: Any) -> str | None:
    """Why an envelope (any frame but `hello` and `disconnect`) cannot be handled, or None when it can."""
    if not isinstance(envelope_id, str) or not envelope_id:
        return f"socket mode frame whose envelope_id is {_described(envelope_id)}, not an id"
    if not isinstance(kind, str):
        return f"socket mode envelope whose type is {_described(kind)}, not a name"
    if kind in PAYLOAD_TYPES and not isinstance(payload, Mapping):
        return f"{kind} envelope whose payload is {_described(payload)}, not an object"
    return None


async def _handle_and_ack(socket: aiohttp.ClientWebSocketResponse, handle: Handle, payload: Mapping[str, Any],
                          envelope_id: str) -> None:
    await handle(payload)
    await _acknowledge(socket, envelope_id)


async def _reject_and_ack(socket: aiohttp.ClientWebSocketResponse, handle: Handle, record: Mapping[str, Any],
                          envelope_id: Any) -> None:
    """Keep the record; acknowledge the envelope when it has an id Slack could send again."""
    await handle(record)
    if isinstance(envelope_id, str) and envelope_id:
        await _acknowledge(socket, envelope_id)


async def _acknowledge(socket: aiohttp.ClientWebSocketResponse, envelope_id: str) -> None:
    await socket.send_json({"envelope_id": envelope_id})


def _envelope_id_of(frame: str) -> Any:
    """The id of an envelope `read_json_object` refused (a `NaN` in its payload, nesting too deep), if it has one."""
    try:
        envelope = json.loads(frame)
    except (ValueError, RecursionError):
        return None
    return envelope.get("envelope_id") if is_object(envelope) else None


def _described(value: Any) -> str:
    return "missing" if value is None else "empty" if value == "" else f"a {type(value).__name__}"


def _channel_of(payload: Any) -> str:
    """The channel an envelope's payload belongs to (an event's, or the clicked message's); "" when it names none."""
    if not is_object(payload):
        return ""
    event, channel = payload.get("event"), payload.get("channel")
    if is_object(event) and isinstance(event.get("channel"), str):
        return event["channel"]
    if is_object(channel) and isinstance(channel.get("id"), str):
        return channel["id"]
    return named if isinstance(named := payload.get("channel_id"), str) else ""
