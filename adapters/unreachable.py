"""One line for a server that could not be reached, whichever HTTP library failed to reach it."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

HINT = "is the server running, and is api_base_url right?"


def describe_unreachable(url: str, exc: BaseException, *, hint: str = HINT) -> str:
    """`cannot reach URL: connection refused — HINT`, from the root cause buried in `exc`.

    requests, aiohttp and httpx each wrap the socket error in two or three layers (requests'
    `ConnectionError(MaxRetryError(NewConnectionError(...)))`), whose reprs are long and say nothing new.
    """
    return f"cannot reach {without_credentials(url)}: {_reason(exc)} — {hint}"


def without_credentials(url: str) -> str:
    """`url` as it may be printed: a `user:password@` it carries left out."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


NOT_CONNECTED = frozenset({"ConnectError", "ClientConnectorError", "NewConnectionError"})
"""httpx's (and httpcore's), aiohttp's and urllib3's errors for a connection that was never made."""


def never_sent(exc: BaseException) -> bool:
    """Whether `exc` shows the request never reached the server (no connection was made), so sending it again
    cannot make a second copy of it there."""
    return any(isinstance(cause, ConnectionRefusedError | socket.gaierror) or type(cause).__name__ in NOT_CONNECTED
               for cause in _causes(exc))


def _reason(exc: BaseException) -> str:
    for cause in _causes(exc):
        match cause:
            case ConnectionRefusedError():
                return "connection refused"
            case socket.gaierror():
                return "host name not found"
            case TimeoutError():
                return "timed out"
            case ssl.SSLError():
                return f"TLS failed ({cause.reason or cause})"
            case _:
                continue
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:160]}" if text else type(exc).__name__


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then everything it wraps: `__cause__`, `__context__`, exceptions in its args, `.reason`."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        nested = [current.__cause__, current.__context__, getattr(current, "reason", None),
                  getattr(current, "os_error", None), *current.args]
        pending.extend(item for item in nested if isinstance(item, BaseException))
