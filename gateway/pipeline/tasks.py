"""Stopping a background task without swallowing the caller's own cancellation."""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait for it to end; a cancellation of the caller meanwhile is passed on.

    `with suppress(CancelledError): await task` would swallow that too, and a task being shut down would run on.
    """
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
