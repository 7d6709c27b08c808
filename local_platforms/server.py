"""What the local platform servers (the local Telegram, Slack and Mattermost) share: listening, and waiting."""

from __future__ import annotations

import asyncio
import contextlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self, TypeGuard

import aiohttp
from aiohttp import web


class ChangeSignal:
    """Wakes waiters on every change of a local server's state.

    An event per generation rather than an `asyncio.Condition`: there is no lock that a cancelled waiter
    could still hold while the server needs it.
    """

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float,  # noqa: ASYNC109
                       recheck: float | None = None) -> None:
        """Return once `predicate()` is true, re-checked after every change; raises `TimeoutError`.

        Args:
            recheck: Also re-check every so many seconds, for a condition no change announces.
        """
        async with asyncio.timeout(timeout):
            while True:
                event = self._event
                if predicate():
                    return
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(recheck):
                        await event.wait()


class LocalServer:
    """An aiohttp application on an OS-assigned port, plus a client session for calls to the gateway."""

    def __init__(self, host: str, port: int) -> None:
        self._host = host
        self._port = port
        self._runner: web.AppRunner | None = None
        self.session: aiohttp.ClientSession | None = None
        self.url = ""

    async def start(self, app: web.Application, *, client_timeout: float) -> str:
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self._host, self._port).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=client_timeout))
        return self.url

    async def stop(self) -> None:
        if self.session is not None:
            await self.session.close()
        if self._runner is not None:
            await self._runner.cleanup()
        self.session, self._runner = None, None


class LocalPlatform(ABC):
    """A local platform server used as `async with server:`, which starts and stops it."""

    @abstractmethod
    async def start(self) -> None:
        """Listen and set `url`."""

    @abstractmethod
    async def stop(self) -> None:
        """Close every connection and stop listening."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()


async def json_object(request: web.Request) -> dict[str, Any] | None:
    """The request's JSON body when it is an object (an empty body reads as `{}`); None when it is not one."""
    try:
        body = json.loads(await request.read() or b"{}")
    except ValueError:
        return None
    return body if is_json_object(body) else None


def is_json_object(value: object) -> TypeGuard[dict[str, Any]]:
    """Whether a decoded JSON value is an object (JSON's keys are always text)."""
    return isinstance(value, dict)


def is_json_array(value: object) -> TypeGuard[list[Any]]:
    """Whether a decoded JSON value is an array."""
    return isinstance(value, list)
