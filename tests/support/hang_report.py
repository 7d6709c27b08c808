"""What a hung test was waiting on: each asyncio task's stack, printed shortly before pytest-timeout ends the test.

pytest-timeout prints every thread's stack, and a test stuck in an `await` shows only an idle event loop there. This
prints, into the test's captured output, where each task of each running loop is suspended."""

from __future__ import annotations

import asyncio
import gc
import io
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BEFORE_TIMEOUT = 10.0
"""Seconds before pytest-timeout's limit at which the tasks are printed."""


@contextmanager
def reported_if_hung(timeout: float | None) -> Iterator[None]:
    """Around one test call with `timeout` seconds (pytest-timeout's): past all but `BEFORE_TIMEOUT` of them, print
    the tasks. No timeout, or too short a one, prints nothing."""
    if not timeout or timeout <= BEFORE_TIMEOUT:
        yield
        return
    timer = threading.Timer(timeout - BEFORE_TIMEOUT, _print_tasks)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _print_tasks() -> None:
    """From the timer's thread: a hung loop sits in its selector, so reading its tasks' frames races nothing."""
    out = io.StringIO()
    loops = [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop) and o.is_running()]
    for loop in loops:
        for task in asyncio.all_tasks(loop):
            out.write(f"--- {task.get_name()}: {task.get_coro()!r}\n")
            task.print_stack(limit=12, file=out)
    print("+++ asyncio tasks of the hung test +++\n" + out.getvalue(), flush=True)
