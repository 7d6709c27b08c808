"""Workers lease inbox items and run one turn per conversation at a time, renewing leases while they run; the same
heartbeat tells a running turn of a stop asked for it, or of a newer message of its conversation (`RunningTurns`)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from opentelemetry.trace import NoOpTracer, StatusCode, Tracer
from sqlalchemy import Connection

from adapters.refusals import refusal
from gateway.pipeline.inbox import Inbox, InboxItem, conversation_hash
from storage.cache import is_cache_outage
from storage.db import is_connection_error

log = logging.getLogger(__name__)
T = TypeVar("T")

Finish = Callable[[Connection], None]
"""A turn's last writes, committed with its inbox item's completion (statements on the database's thread)."""
Handler = Callable[[InboxItem], Awaitable[Finish | None]]
Prepare = Callable[[Connection, list[InboxItem]], None]
GiveUp = Callable[[InboxItem], Awaitable[None]]

FIRST_WAIT = timedelta(seconds=1)
LONGEST_WAIT = timedelta(seconds=30)
"""An item a dependency fault put back waits FIRST_WAIT, doubling with each fault in a row, up to LONGEST_WAIT."""
HEARTBEAT = 0.05
"""The heartbeat's beat, as a part of the lease (0.5 s of 10): how soon a stop asked on any replica is noticed."""
RENEW_EVERY = 5
"""Beats between lease renewals: every 2.5 s of a 10 s lease."""
UNTRACED: Tracer = NoOpTracer()
"""A worker's tracer when the gateway exports no traces."""
_UNREACHED = (ConnectionError, TimeoutError, socket.gaierror)
"""A peer that could not be reached or did not answer in time. Not every `OSError`: requests' `HTTPError`, which
the Mattermost driver raises for a 400 or a 403, is one, and a platform's refusal is the turn's own failure."""
_NETWORK_ERRNOS = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN, errno.EHOSTDOWN})


def is_dependency_fault(exc: BaseException) -> bool:
    """Redis, the database or a platform could not be reached: the turn did nothing wrong, it just has to wait.

    Follows the chain of causes, since SDKs wrap the socket error (python-telegram-bot's `NetworkError` is raised
    from httpx's `ConnectError`, itself from the `OSError`).
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if is_connection_error(current) or is_cache_outage(current) or isinstance(current, _UNREACHED):
            return True
        if isinstance(current, OSError) and current.errno in _NETWORK_ERRNOS:
            return True
        current = current.__cause__ or current.__context__
    return False


def turn_attributes(item: InboxItem) -> dict[str, str | int]:
    """What a turn's span says of it: which item, which conversation (hashed, as the logs carry it: a key holds
    chat and user ids); never what anybody wrote."""
    return {"gateway.inbox_id": item.id, "gateway.conversation": conversation_hash(item.conversation_key),
            "gateway.bot": item.bot_name, "gateway.attempt": item.attempts}


class TurnStopped(Exception):
    """The running turn was stopped: by a person (`by` names them), by a newer message (`while_busy: interrupt`), or
    because another worker holds its item now (`lost`: a stalled database let the lease lapse)."""

    def __init__(self, by: str, *, interrupted: bool = False, lost: bool = False) -> None:
        super().__init__(f"stopped by {by}")
        self.by = by
        self.interrupted = interrupted
        self.lost = lost


class TurnSignal:
    """What this replica learns of one of its running turns while it runs: a stop asked for it, a newer message of its
    conversation. The runtime asks the model inside `asking()`, the one place a stop cancels."""

    def __init__(self, item_id: int, owner: str) -> None:
        self.item_id = item_id
        self.owner = owner
        """The worker holding the item's lease."""
        self.taken: set[int] = set()
        """The items of messages this attempt took (`while_busy: steer`)."""
        self.stop_by: str | None = None
        self.interrupted = False
        self.lost = False
        self.newer = False
        """A newer message of the conversation waits in the inbox (cleared by whoever takes it)."""
        self.retaking = False
        """A retried attempt: its first request takes again what an earlier attempt took, and nothing new."""
        self.on_newer: Callable[[], None] | None = None
        """Told when a newer message is first noted (`while_busy`: the runtime sets it for its run)."""
        self._asking: asyncio.Task[Any] | None = None
        self._cancelled = False

    def stop(self, by: str, *, interrupted: bool = False, lost: bool = False) -> None:
        """Stop the turn: at once while the model is asked, else as it next asks."""
        if self.stop_by is not None:
            return
        self.stop_by, self.interrupted, self.lost = by, interrupted, lost
        if self._asking is not None and not self._cancelled:
            self._cancelled = True
            self._asking.cancel()

    def note_newer(self) -> None:
        if not self.newer:
            self.newer = True
            if self.on_newer is not None:
                self.on_newer()

    @contextmanager
    def asking(self) -> Generator[None]:
        """Around the model run, in the turn's task: a stop cancels it and comes out as `TurnStopped`; a cancellation
        of anything else (a shutdown) goes on as one."""
        if self.stop_by is not None:
            raise TurnStopped(self.stop_by, interrupted=self.interrupted, lost=self.lost)
        task = asyncio.current_task()
        self._asking = task
        try:
            yield
        except asyncio.CancelledError:
            if not self._cancelled or task is None or task.uncancel() > 0 or self.stop_by is None:
                raise
            raise TurnStopped(self.stop_by, interrupted=self.interrupted, lost=self.lost) from None
        finally:
            self._asking = None


class RunningTurns:
    """The signals of the turns this process runs, by inbox item: the worker notes what its heartbeat reads, a stop
    asked in this process is noted at once, the runtime acts on them."""

    def __init__(self) -> None:
        self._signals: dict[int, TurnSignal] = {}

    def begin(self, item_id: int, owner: str) -> TurnSignal:
        return self._signals.setdefault(item_id, TurnSignal(item_id, owner))

    def get(self, item_id: int | None) -> TurnSignal | None:
        return None if item_id is None else self._signals.get(item_id)

    def end(self, item_id: int) -> None:
        self._signals.pop(item_id, None)

    def running(self) -> list[TurnSignal]:
        return list(self._signals.values())


def _nanoseconds(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)


class Worker:
    def __init__(self, inbox: Inbox, handle: Handler, *, give_up: GiveUp | None = None, concurrency: int = 8,
                 lease: timedelta = timedelta(seconds=10), idle_poll: float = 1.0,
                 tracer: Tracer = UNTRACED, prepare: Prepare | None = None,
                 turns: RunningTurns | None = None) -> None:
        """`give_up` tells the chat of an item whose turn failed its last attempt; `tracer` opens one span per
        item around its whole turn, the agent's own spans nested in it (`gateway/server/tracing.py`); `prepare`
        reads what the claimed items' turns need, inside the claim's transaction. What `handle` returns is
        committed with the item's completion. `turns`: where the heartbeat notes what it reads of the running turns
        (a stop, a newer message), shared with the runtime."""
        self.worker_id = f"worker-{uuid.uuid4().hex[:12]}"
        self._inbox = inbox
        self._handle = handle
        self._tracer = tracer
        self._give_up = give_up
        self._prepare = prepare
        self._maybe_more = False
        """Items may wait that no claim took (all slots were busy): look again when a turn ends."""
        self._claims_failing = False
        self._concurrency = concurrency
        self._lease = lease
        self._idle_poll = idle_poll
        self._wake = asyncio.Event()
        self._running: dict[int, asyncio.Task[None]] = {}
        self._draining = False
        self.turns = turns or RunningTurns()

    def busy(self) -> bool:
        """A message accepted now may wait before its placeholder: turns are running here, and its own start queues
        behind their work (a full set of slots, or its conversation mid-turn, or at saturation the process itself)."""
        return bool(self._running)

    def wake(self) -> None:
        """A new item was accepted in this process: look now instead of at the next poll."""
        self._wake.set()

    async def run(self) -> None:
        heartbeat = asyncio.create_task(self._renew_leases())
        try:
            while True:
                await self._claim_and_start()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._idle_poll):
                        await self._wake.wait()
                self._wake.clear()
        finally:
            heartbeat.cancel()
            for task in self._running.values():
                task.cancel()
            await asyncio.gather(heartbeat, *self._running.values(), return_exceptions=True)

    async def drain(self, grace: float) -> None:
        """Stop claiming and give running turns `grace` seconds; unfinished ones keep their lease and retry."""
        self._draining = True
        running = list(self._running.values())
        if running and grace > 0:
            await asyncio.wait(running, timeout=grace)

    async def _claim_and_start(self) -> None:
        free = self._concurrency - len(self._running)
        if free <= 0 or self._draining:
            self._maybe_more = self._maybe_more or free <= 0
            return
        self._maybe_more = False
        try:
            items = await self._inbox.claim(self.worker_id, lease=self._lease, limit=free, then=self._prepare)
        except Exception as exc:  # a database outage must not kill the worker; the next poll retries
            if not self._claims_failing:
                log.error("claiming inbox items failed, retrying at every poll until it works: %s", exc)
            self._claims_failing = True
            return
        if self._claims_failing:
            log.warning("claiming inbox items works again")
            self._claims_failing = False
        self._maybe_more = len(items) >= free
        for item in items:
            if item.id in self._running:  # its lease lapsed while its turn ran here (a stall): the lease is ours again
                log.warning("inbox item %d was claimed again while its turn runs here; that turn goes on", item.id)
                continue
            self._running[item.id] = asyncio.create_task(self._process(item), name=f"turn {item.id}")

    async def _process(self, item: InboxItem) -> None:
        more = True
        self.turns.begin(item.id, self.worker_id)
        try:
            with self._tracer.start_as_current_span("turn", attributes=turn_attributes(item),
                                                    start_time=_nanoseconds(item.accepted_at)) as span:
                try:
                    finish = await self._handle(item)
                except Exception as exc:
                    span.record_exception(exc)
                    span.set_status(StatusCode.ERROR, type(exc).__name__)
                    await self._settle(partial(self._after_failure, item, exc))
                else:
                    more = await self._settle(partial(self._inbox.complete, self.worker_id, item.id, finish),
                                              unknown=True)
        finally:
            self._running.pop(item.id, None)
            self.turns.end(item.id)
            # Claim again only when something may wait: the next message of this conversation, or items no free
            # slot took. Anything else accepted here woke the worker itself; other replicas' leftovers wait for
            # the idle poll, as before.
            if more or self._maybe_more:
                self.wake()

    async def _after_failure(self, item: InboxItem, exc: Exception) -> None:
        error = f"{type(exc).__name__}: {exc}"
        if is_dependency_fault(exc):
            wait = min(FIRST_WAIT * 2 ** max(0, item.attempts - item.failures - 1), LONGEST_WAIT)
            log.warning("turn for inbox item %d waits %.0fs for a dependency: %s", item.id, wait.total_seconds(),
                        error)
            await self._inbox.defer(self.worker_id, item, error, delay=wait)
            asyncio.get_running_loop().call_later(wait.total_seconds(), self.wake)  # due: look at once
            return
        refused = refusal(exc)
        if refused is not None:  # the platform's answer, a known outcome: its words say it all
            log.warning("turn for inbox item %d failed (failure %d): the platform refused a call (%s)", item.id,
                        item.failures + 1, refused)
        else:
            log.exception("turn for inbox item %d failed (failure %d)", item.id, item.failures + 1)
        if await self._inbox.fail(self.worker_id, item, error) and self._give_up is not None:
            try:
                await self._give_up(item)
            except Exception as notice_exc:  # the item is failed either way; the notice is a courtesy
                log.warning("could not tell the chat inbox item %d was given up: %s", item.id, notice_exc)

    async def _settle(self, record: Callable[[], Awaitable[T]], unknown: T | None = None) -> T | None:
        """Record how a turn ended, through a database outage: until the lease would lapse anyway, after which
        another claim retries the turn (and a finished turn's retry edits the reply it already posted).
        Returns what `record` returned, or `unknown` when it never worked."""
        deadline = time.monotonic() + self._lease.total_seconds()
        delay = FIRST_WAIT.total_seconds()
        while True:
            try:
                return await record()
            except Exception as exc:
                if not is_dependency_fault(exc) or time.monotonic() + delay > deadline:
                    log.error("recording the end of a turn failed; its lease will lapse and it is retried: %s", exc)
                    return unknown
            await asyncio.sleep(delay)
            delay *= 2

    async def _renew_leases(self) -> None:
        """Every `HEARTBEAT` of the lease while turns run: read what is asked of them (a stop, a newer message of
        their conversation), and every fifth beat renew their leases in the same statement's transaction."""
        beat = self._lease.total_seconds() * HEARTBEAT
        beats = 0
        while True:
            await asyncio.sleep(beat)
            beats += 1
            running = list(self._running)
            if not running:
                continue
            try:
                notes = await self._inbox.heartbeat(self.worker_id, running,
                                                    lease=self._lease if beats % RENEW_EVERY == 0 else None)
            except Exception as exc:  # keep renewing; a lost lease only means another worker may retry
                log.error("renewing inbox leases failed: %s", exc)
                continue
            for note in notes:
                signal = self.turns.get(note.item_id)
                if signal is None:
                    continue
                if note.lost:
                    log.warning("inbox item %d is another worker's now (its lease lapsed); its turn here stops",
                                note.item_id)
                    signal.stop("another worker", lost=True)
                if note.stop_by is not None:
                    signal.stop(note.stop_by)
                if note.newer:
                    signal.note_newer()
