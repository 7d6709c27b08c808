"""Reading platform bytes without trusting them: bounded JSON, and the record of a frame that could not be read;
and handling a transport's events at once across conversations, in order within one (`InOrder`).

Every JSON body, frame and embedded JSON string an adapter reads goes through `read_json`, so that no
input raises anything but `MalformedPayload`: not `RecursionError` on deep nesting, not `ValueError`
from an integer of 5,000 digits, not `UnicodeDecodeError`. A value that passes is one the inbox can
store (no `NaN` or `Infinity`, which PostgreSQL's `json` refuses) and every later reader can walk; values
another library parsed (python-telegram-bot's polled updates) are checked with `check_storable`.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeGuard

from adapters.base import FileRef, MalformedPayload

MAX_DEPTH = 32
"""Nesting levels a platform payload may have; real ones (Slack blocks, Telegram replies) stay under 15."""
UNREADABLE = "gateway_unreadable"
"""Key of the payload a transport delivers for a frame it could not read (see `unreadable_frame`)."""
FRAME_EXCERPT = 2_000
"""Characters of an unreadable frame kept in its record."""


def read_json(data: bytes | str, what: str) -> Any:
    """`data` decoded as JSON, at most `MAX_DEPTH` levels deep. Raises `MalformedPayload` naming `what`."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, too many digits
        raise MalformedPayload(f"{what} is not JSON") from None
    check_storable(value, what)
    return value


def check_storable(value: Any, what: str) -> None:
    """Raises `MalformedPayload` for a value nested deeper than `MAX_DEPTH`, or holding a number JSON has no word
    for: Python reads `NaN`, `Infinity` and `1e999`, which PostgreSQL's `json` refuses, so a payload holding one
    would fail its commit (and be redelivered) for ever. For values parsed elsewhere (python-telegram-bot's)."""
    problem = _unstorable(value, MAX_DEPTH)
    if problem is not None:
        raise MalformedPayload(f"{what} {problem}")


def read_json_object(data: bytes | str, what: str) -> dict[str, Any]:
    """As `read_json`, for a body that must be a JSON object."""
    value = read_json(data, what)
    if not is_object(value):
        raise MalformedPayload(f"{what} is not a JSON object")
    return dict(value)


def is_object(value: object) -> TypeGuard[Mapping[str, Any]]:
    """Whether a payload's value is a JSON object (a mapping: JSON's keys are always text)."""
    return isinstance(value, Mapping)


def is_array(value: object) -> TypeGuard[list[Any]]:
    """Whether a payload's value is a JSON array."""
    return isinstance(value, list)


def objects_in(value: object) -> list[Mapping[str, Any]]:
    """The objects among a JSON array's items; none when `value` is not an array."""
    return [item for item in value if is_object(item)] if is_array(value) else []


def unreadable_frame(frame: bytes | str, reason: str) -> dict[str, Any]:
    """What a transport delivers for a frame it cannot read: every parser refuses it, so it is kept as rejected."""
    text = frame.decode("utf-8", errors="replace") if isinstance(frame, bytes) else frame
    return {UNREADABLE: reason, "frame": text[:FRAME_EXCERPT], "frame_size": len(text)}


def refuse_unreadable(payload: Mapping[str, Any]) -> None:
    """Raises `MalformedPayload` for the record of an unreadable frame; the first thing every `parse` does."""
    if UNREADABLE in payload:
        raise MalformedPayload(f"unreadable frame: {payload[UNREADABLE]}")


def text_id(value: Any, what: str) -> str:
    """`value` when it is non-empty text, as an id, a `ts` or a name must be; raises `MalformedPayload` naming `what`
    otherwise, rather than letting `str()` make "['C1']" or "None" an id the platform then refuses turn after turn."""
    if not isinstance(value, str) or not value:
        raise MalformedPayload(f"{what} is {'missing' if value is None else f'a {type(value).__name__}'}, not an id")
    return value


def optional_text_id(value: Any, what: str) -> str | None:
    """As `text_id`, for a field that may be absent (null or empty)."""
    return None if value is None or value == "" else text_id(value, what)


def file_ref(*, file_id: Any, name: Any, mime_type: Any, size: Any, duration: Any = None) -> FileRef | None:
    """A file handle from a payload's fields, each of any type: None when the id is not one (neither text nor a
    whole number); a name made text; a content type kept only when it is text, a size only when it is a count,
    a duration (seconds) only when it is a finite number of them."""
    if isinstance(file_id, bool) or not isinstance(file_id, str | int) or file_id == "":
        return None
    return FileRef(file_id=str(file_id), name=name if isinstance(name, str) and name else "file",
                   mime_type=mime_type if isinstance(mime_type, str) and mime_type else None,
                   size=size if _count(size) else None,
                   duration=float(duration) if (_count(duration) and duration < 2**53) or _seconds(duration) else None)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _seconds(value: Any) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value >= 0


def _unstorable(value: Any, limit: int) -> str | None:
    """Walked without recursion, since the point is to refuse what recursion cannot hold."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        children = node.values() if is_object(node) else node if is_array(node) else (node,)
        for child in children:
            if isinstance(child, float) and not math.isfinite(child):
                return f"holds {child!r}, a number JSON cannot carry"
            if (is_object(child) or is_array(child)) and child is not node:
                if depth + 1 > limit:
                    return f"nests deeper than {limit} levels"
                pending.append((child, depth + 1))
    return None


MAX_IN_FLIGHT = 64
"""Events handled or waiting at once on one connection, before reading pauses."""


class InOrder:
    """`async with InOrder() as order`: work of one key after the work of that key before it, other keys' at the
    same time; leaving the block waits for all of it.

    The first work to fail cancels the rest before any of it runs on (a message is never committed, nor
    acknowledged, ahead of an earlier one of its conversation), and leaving the block raises that failure itself.
    At most `MAX_IN_FLIGHT` run or wait at once; `submit` waits for a slot, so reading pauses.
    """

    def __init__(self) -> None:
        self._group = asyncio.TaskGroup()
        self._last: dict[str, asyncio.Task[None]] = {}
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)

    async def __aenter__(self) -> InOrder:
        await self._group.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        try:
            await self._group.__aexit__(*exc_info)
        except ExceptionGroup as failed:  # the caller sees the first failure, as it would without the group
            raise failed.exceptions[0] from None

    async def submit(self, key: str, work: Callable[[], Awaitable[None]]) -> None:
        await self._slots.acquire()
        task = self._group.create_task(self._after(self._last.get(key), work))
        self._last[key] = task
        task.add_done_callback(lambda done: self._done(key, done))

    async def _after(self, previous: asyncio.Task[None] | None, work: Callable[[], Awaitable[None]]) -> None:
        if previous is not None:
            await asyncio.wait({previous})  # a failure there cancels this task first (the group's own callback)
        await work()

    def _done(self, key: str, task: asyncio.Task[None]) -> None:
        self._slots.release()
        if self._last.get(key) is task:
            del self._last[key]
