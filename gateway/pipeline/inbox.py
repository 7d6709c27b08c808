"""The durable inbox: accepted once per logical message, claimed under a lease, one turn per conversation."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, bindparam, delete, exists, func, or_, select, update

from adapters.base import ApprovalClick, Inbound
from storage.db import Database, insert_for
from storage.tables import INBOX, utcnow

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
"""The turn's own failures an item may have before it is given up; dependency faults do not count."""
OPEN = ("pending", "running", "waiting")
"""An item in one of these still holds its conversation's place in line."""
REJECT_EXCERPT = 4_096
"""Bytes of an unreadable payload kept beside its hash and size."""
REJECT_ERROR = 1_000
"""Characters of the reason a payload was unreadable."""
REJECTED_RETENTION = timedelta(days=3)
"""How long a rejected payload is kept: long enough to look into, shorter than answered items."""
PARSED_KEPT = 10_000
"""Events parsed at intake kept for their claim in this process; past it the oldest are dropped (a claim on another
replica takes theirs), and their claim parses the stored payload."""
AT_ONCE_LANE = ":at-once"
"""Added to a conversation's key for the commands answered while a turn of it runs (`help`, `status`): they are
claimed at once, in their order among themselves, and exactly once like every item (the unique logical id)."""
"""Statements on the turn's path name the table, not the mapped class: Core statements skip the ORM's bulk
persistence (its attribute evaluation and synchronisation), which cost more than the statements themselves."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InboxItem:
    id: int
    bot_name: str
    conversation_key: str
    payload: Mapping[str, Any]
    logical_id: str
    attempts: int
    """Claims so far, this one included: above 1, an earlier attempt may have done part of the turn."""
    failures: int
    """The turn's own failures before this claim."""
    reply_message_id: str | None
    accepted_at: datetime
    """When intake committed it: where the turn's trace begins."""
    event: Inbound | ApprovalClick | None = None
    """What intake parsed from `payload`, when it accepted the item in this process; None: parse `payload` (a claim
    on another replica, a retry, a restart)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnNote:
    """What the heartbeat read of one running item: a stop asked for it, a newer message of its conversation, or
    that its lease is another worker's now (`lost`)."""

    item_id: int
    stop_by: str | None
    newer: bool
    lost: bool = False


def at_once(conversation_key: str) -> str:
    """The lane beside a conversation, claimed while its turn runs: a stop (the word, the button) goes there, so it
    does not wait behind the turn it stops."""
    return f"{conversation_key}{AT_ONCE_LANE}"


class Inbox:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._claim = _claim(db.dialect)
        self._insert = (insert_for(db.dialect)(INBOX).on_conflict_do_nothing(index_elements=["logical_id"])
                        .returning(INBOX.c.id))
        """Its columns are the keys of the values it runs with (an accepted event's, a rejected payload's)."""
        self._parsed: dict[int, Inbound | ApprovalClick] = {}
        """Accepted items' events, by item id, until their claim here (`InboxItem.event`)."""
        self._parsed_lock = threading.Lock()
        """The claim takes from `_parsed` on the database's thread."""

    async def accept(self, *, logical_id: str, bot_name: str, conversation_key: str,
                     payload: Mapping[str, Any], event: Inbound | ApprovalClick | None = None) -> bool:
        """Commit one event; False when its logical id was accepted before (a redelivery). `event`: what `payload`
        parses to, handed to the item's claim in this process so the delivery is parsed once."""
        values = {"logical_id": logical_id, "bot_name": bot_name, "conversation_key": conversation_key,
                  "payload": dict(payload), "status": "pending", "created_at": utcnow()}
        item_id = await self._insert_once(values)
        if item_id is not None and event is not None:
            with self._parsed_lock:
                self._parsed[item_id] = event
                if len(self._parsed) > PARSED_KEPT:
                    del self._parsed[next(iter(self._parsed))]
        return item_id is not None

    async def reject(self, *, bot_name: str, body: bytes, error: str) -> None:
        """Keep what an unreadable payload was, for inspection: its hash, its size and its first bytes.

        The hash is its logical id, so a redelivery of the same bytes is kept once.
        """
        digest = hashlib.sha256(body).hexdigest()
        payload = {"sha256": digest, "size": len(body), "truncated": len(body) > REJECT_EXCERPT,
                   "excerpt": _storable_text(body[:REJECT_EXCERPT].decode("utf-8", errors="replace"))}
        values = {"logical_id": f"rejected:{bot_name}:{digest}", "bot_name": bot_name, "conversation_key": "-",
                  "payload": payload, "status": "rejected", "error": _storable_text(error)[:REJECT_ERROR],
                  "created_at": utcnow(), "finished_at": utcnow()}
        await self._insert_once(values)

    async def backlog(self) -> tuple[int, float]:
        """How many items wait to be claimed, and for how many seconds the oldest of them has (two aggregates)."""
        def work(connection: Connection) -> tuple[int, float]:
            now = utcnow()
            count, oldest = connection.execute(
                select(func.count(INBOX.c.id), func.min(INBOX.c.created_at)).where(_open_or_expired(now))).one()
            return int(count or 0), 0.0 if oldest is None else max(0.0, (now - _aware(oldest)).total_seconds())
        return await self._db.run(work, single=True)

    async def in_line(self, conversation_key: str) -> tuple[int, int]:
        """(running, waiting) items of a conversation: a turn under way, and messages queued behind it."""
        def work(connection: Connection) -> tuple[int, int]:
            rows = connection.execute(select(INBOX.c.status, func.count()).where(
                INBOX.c.conversation_key == conversation_key, INBOX.c.status.in_(OPEN)).group_by(INBOX.c.status)).all()
            counts = {status: int(count) for status, count in rows}
            return counts.get("running", 0), counts.get("pending", 0) + counts.get("waiting", 0)
        return await self._db.run(work, single=True)

    async def claim(self, worker_id: str, *, lease: timedelta, limit: int,
                    then: Callable[[Connection, list[InboxItem]], None] | None = None) -> list[InboxItem]:
        """Lease the oldest open item of each idle conversation, up to `limit` items; `then` reads what their turns
        need first in the same transaction (a turn's reads before its placeholder cost no transaction of their own)."""
        claim = self._claim

        def work(connection: Connection) -> list[InboxItem]:
            now = utcnow()
            rows = connection.execute(claim, {"now": now, "limit": limit, "owner": worker_id,
                                              "until": now + lease}).all()
            claimed = sorted((self._with_event(_item(row)) for row in rows), key=lambda item: item.id)
            if claimed and then is not None:
                then(connection, claimed)
            return claimed
        return await self._db.run(work)

    async def extend_leases(self, worker_id: str, item_ids: Sequence[int], *, lease: timedelta) -> None:
        if not item_ids:
            return

        def work(connection: Connection) -> None:
            connection.execute(
                update(INBOX).where(INBOX.c.id.in_(item_ids), INBOX.c.lease_owner == worker_id,
                                    INBOX.c.status == "running")
                .values(lease_until=utcnow() + lease))
        await self._db.run(work, single=True)

    async def heartbeat(self, worker_id: str, item_ids: Sequence[int], *,
                        lease: timedelta | None) -> list[TurnNote]:
        """What is asked of these running items (only those with something to say), renewing their leases first
        when `lease` is given (an item whose lease could not be renewed is another worker's now): one transaction,
        a read and at most one write."""
        if not item_ids:
            return []

        def work(connection: Connection) -> list[TurnNote]:
            lost: list[TurnNote] = []
            if lease is not None:
                renewed = set(connection.execute(
                    update(INBOX).where(INBOX.c.id.in_(item_ids), INBOX.c.lease_owner == worker_id,
                                        INBOX.c.status == "running")
                    .values(lease_until=utcnow() + lease).returning(INBOX.c.id)).scalars())
                lost = [TurnNote(item_id=item_id, stop_by=None, newer=False, lost=True)
                        for item_id in item_ids if item_id not in renewed]
            rows = connection.execute(_NOTES, {"ids": list(item_ids), "owner": worker_id}).all()
            return lost + [TurnNote(item_id=row.id, stop_by=row.stop_requested_by, newer=bool(row.newer))
                           for row in rows]
        return await self._db.run(work)

    async def remember_reply(self, item_id: int, message_id: str | None) -> None:
        """Urgent, ahead of the turns' transactions: until it lands, a crash strands the post it records."""
        await self._db.run(lambda connection: remember_reply(connection, item_id, message_id), urgent=True,
                           single=True)

    async def complete(self, worker_id: str, item_id: int,
                       also: Callable[[Connection], None] | None = None) -> bool:
        """Mark the item done, in one transaction with `also` (the turn's own last writes: the answer, the run).
        True when its conversation has another item waiting, which the worker then claims at once.

        An item whose lease this worker lost (a stalled database, a paused process) is another worker's now: its
        turn writes the answer, so this one writes nothing, or the history would hold the answer twice."""
        def work(connection: Connection) -> bool | None:
            key = connection.execute(_COMPLETE, {"item": item_id, "owner": worker_id, "now": utcnow()}).scalar()
            if key is None:
                return None
            if also is not None:
                also(connection)
            return connection.execute(_WAITING, {"key": key, "item": item_id}).scalar() is not None
        waiting = await self._db.run(work)
        if waiting is None:
            log.warning("inbox item %d was taken over by another worker before this turn ended; its answer is not "
                        "recorded here", item_id)
            return True  # whoever has it now decides; a look costs one claim
        return waiting

    async def fail(self, worker_id: str, item: InboxItem, error: str) -> bool:
        """The turn itself failed: give the item back for another attempt, or mark it failed once its attempts
        run out. True: it was given up."""
        failures = item.failures + 1
        status = "failed" if failures >= MAX_ATTEMPTS else "pending"
        await self._finish(worker_id, item.id, status=status, error=error, failures=failures)
        return status == "failed"

    async def defer(self, worker_id: str, item: InboxItem, error: str, *, delay: timedelta) -> None:
        """A dependency failed, not the turn: the item waits `delay`, keeps its place in its conversation, and
        spends none of its attempts."""
        def work(connection: Connection) -> None:
            connection.execute(
                update(INBOX).where(INBOX.c.id == item.id, INBOX.c.lease_owner == worker_id)
                .values(status="waiting", error=error, lease_owner=None, lease_until=utcnow() + delay))
        await self._db.run(work, single=True)

    async def prune(self, *, older_than: timedelta) -> int:
        """Forget finished items (and with them their dedupe keys) once no platform would redeliver them;
        rejected ones sooner, after `REJECTED_RETENTION`."""
        now = utcnow()
        finished_before, rejected_before = now - older_than, now - min(older_than, REJECTED_RETENTION)

        def work(connection: Connection) -> int:
            return connection.execute(delete(INBOX).where(or_(
                and_(INBOX.c.status.in_(("done", "failed")), INBOX.c.finished_at < finished_before),
                and_(INBOX.c.status == "rejected", INBOX.c.finished_at < rejected_before)))).rowcount
        return await self._db.run(work, single=True)

    async def _finish(self, worker_id: str, item_id: int, *, status: str, error: str | None,
                      **counts: int) -> None:
        def work(connection: Connection) -> None:
            connection.execute(
                update(INBOX).where(INBOX.c.id == item_id, INBOX.c.lease_owner == worker_id)
                .values(status=status, error=error, lease_owner=None, lease_until=None,
                        finished_at=utcnow() if status != "pending" else None, **counts))
        await self._db.run(work, single=True)

    async def _insert_once(self, values: dict[str, Any]) -> int | None:
        """The new item's id; None when its logical id was taken."""
        def work(connection: Connection) -> int | None:
            return connection.execute(self._insert, values).scalar()
        return await self._db.run(work, urgent=True, single=True)  # the platform's ack waits for it

    def _with_event(self, item: InboxItem) -> InboxItem:
        with self._parsed_lock:
            event = self._parsed.pop(item.id, None)
        return item if event is None else replace(item, event=event)


def add_item(connection: Connection, *, logical_id: str, bot_name: str, conversation_key: str,
             payload: Mapping[str, Any]) -> bool:
    """Accept one item in the caller's transaction (a firing, with the write that moves its schedule on); False
    when its logical id was accepted before."""
    statement = (insert_for(connection.dialect.name)(INBOX).on_conflict_do_nothing(index_elements=["logical_id"])
                 .returning(INBOX.c.id))
    values = {"logical_id": logical_id, "bot_name": bot_name, "conversation_key": conversation_key,
              "payload": dict(payload), "status": "pending", "created_at": utcnow()}
    return connection.execute(statement, values).scalar() is not None


def remember_reply(connection: Connection, item_id: int, message_id: str | None) -> None:
    """The item's reply (placeholder) id, for a retry to edit rather than post again; in the caller's transaction."""
    connection.execute(_REMEMBER_REPLY, {"item": item_id, "message_id": message_id})


def _storable_text(text: str) -> str:
    """PostgreSQL's text cannot hold NUL, which platform bytes may carry."""
    return text.replace("\x00", "\ufffd")


def _aware(moment: datetime) -> datetime:
    """SQLite hands timestamps back without their zone; they were written in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _open_or_expired(now: Any) -> Any:
    """Pending, or running under a lapsed lease, or done waiting for a dependency."""
    return or_(INBOX.c.status == "pending",
               and_(INBOX.c.status.in_(("running", "waiting")), INBOX.c.lease_until < now))


def _claimable(dialect: str) -> Any:
    """Heads of conversations: an item is claimable only if no older item of its conversation is open."""
    older = INBOX.alias("older")
    head = (select(func.min(older.c.id))
            .where(older.c.conversation_key == INBOX.c.conversation_key, older.c.status.in_(OPEN))
            .scalar_subquery())
    query = (select(INBOX.c.id).where(_open_or_expired(bindparam("now")), INBOX.c.id == head)
             .order_by(INBOX.c.id).limit(bindparam("limit")))
    return query.with_for_update(skip_locked=True) if dialect == "postgresql" else query


def _claim(dialect: str) -> Any:
    """One statement: lease the claimable heads (each checked again as the row is updated) and return them."""
    return (update(INBOX).where(INBOX.c.id.in_(_claimable(dialect)), _open_or_expired(bindparam("now")))
            .values(status="running", lease_owner=bindparam("owner"), lease_until=bindparam("until"),
                    attempts=INBOX.c.attempts + 1)
            .returning(INBOX.c.id, INBOX.c.bot_name, INBOX.c.conversation_key, INBOX.c.payload, INBOX.c.logical_id,
                       INBOX.c.attempts,
                       INBOX.c.failures, INBOX.c.reply_message_id, INBOX.c.created_at))
_COMPLETE = (update(INBOX).where(INBOX.c.id == bindparam("item"), INBOX.c.lease_owner == bindparam("owner"))
             .values(status="done", error=None, lease_owner=None, lease_until=None, finished_at=bindparam("now"))
             .returning(INBOX.c.conversation_key))
_WAITING = (select(INBOX.c.id).where(INBOX.c.conversation_key == bindparam("key"), INBOX.c.status.in_(OPEN),
                                     INBOX.c.id > bindparam("item")).limit(1))
_LATER = INBOX.alias("later")
_NEWER = exists().where(_LATER.c.conversation_key == INBOX.c.conversation_key, _LATER.c.status == "pending",
                        _LATER.c.id > INBOX.c.id).correlate(INBOX)
_NOTES = (select(INBOX.c.id, INBOX.c.stop_requested_by, _NEWER.label("newer"))
          .where(INBOX.c.id.in_(bindparam("ids", expanding=True)), INBOX.c.lease_owner == bindparam("owner"),
                 INBOX.c.status == "running", or_(INBOX.c.stop_requested_by.is_not(None), _NEWER)))
_REMEMBER_REPLY = update(INBOX).where(INBOX.c.id == bindparam("item")).values(reply_message_id=bindparam("message_id"))


def _item(row: Any) -> InboxItem:
    return InboxItem(id=row.id, bot_name=row.bot_name, conversation_key=row.conversation_key,
                     payload=row.payload, logical_id=row.logical_id, attempts=row.attempts, failures=row.failures,
                     reply_message_id=row.reply_message_id, accepted_at=row.created_at)


def conversation_hash(key: str) -> str:
    """A conversation key as logs and spans carry it: stable, so one conversation's turns can be followed, but no
    chat or user id."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]
