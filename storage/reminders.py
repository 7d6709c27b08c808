"""The reminders agents set (`reminders` table): kept per conversation, fired by the gateway's scheduler, which moves
each on by a compare-and-swap so that of two replicas only one commits its firing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, delete, func, insert, select, update

from storage.db import Database
from storage.tables import REMINDERS, utcnow


@dataclass(frozen=True, slots=True, kw_only=True)
class ReminderSpec:
    """What the agent's tool call sets: where it posts, for whom, what, and how often."""

    bot_name: str
    conversation_key: str
    address: Mapping[str, Any]
    """The chat it posts in, as `ChatAddress` fields."""
    speaker: Mapping[str, Any]
    """Who set it, as `Speaker` fields."""
    owner_key: str
    mode: str
    text: str
    recurrence: str | None
    timezone: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NewReminder(ReminderSpec):
    first_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Reminder(ReminderSpec):
    """A stored reminder: its spec, and where the scheduler has it."""

    id: int
    next_fire_at: datetime | None
    status: str
    fired: int
    created_at: datetime


class Reminders:
    """The queries of the tools and commands; the scheduler's own, inside its transaction, are `due` and `move_on`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, new: NewReminder) -> Reminder:
        def work(connection: Connection) -> Reminder:
            spec = {field.name: getattr(new, field.name) for field in fields(ReminderSpec)}
            row_id = connection.execute(insert(REMINDERS).returning(REMINDERS.c.id), spec | {
                "address": dict(new.address), "speaker": dict(new.speaker), "next_fire_at": new.first_at,
                "status": "active", "fired": 0, "created_at": utcnow()}).scalar_one()
            return _reminder(connection.execute(select(REMINDERS).where(REMINDERS.c.id == row_id)).one())
        return await self._db.run(work)

    async def active(self, *, conversation_key: str | None = None) -> list[Reminder]:
        """Active reminders, soonest first: a conversation's, or (None) every one."""
        def work(connection: Connection) -> list[Reminder]:
            query = select(REMINDERS).where(REMINDERS.c.status == "active")
            if conversation_key is not None:
                query = query.where(REMINDERS.c.conversation_key == conversation_key)
            return [_reminder(row) for row in connection.execute(query.order_by(REMINDERS.c.next_fire_at)).all()]
        return await self._db.run(work)

    async def count(self, *, owner_key: str | None = None, conversation_key: str | None = None) -> int:
        """Active reminders of a person, or of a conversation."""
        def work(connection: Connection) -> int:
            query = select(func.count()).where(REMINDERS.c.status == "active")
            if owner_key is not None:
                query = query.where(REMINDERS.c.owner_key == owner_key)
            if conversation_key is not None:
                query = query.where(REMINDERS.c.conversation_key == conversation_key)
            return int(connection.execute(query).scalar_one())
        return await self._db.run(work)

    async def cancel(self, reminder_id: int, *, conversation_key: str) -> bool:
        """False when the conversation holds no such active reminder (another's, or one done already)."""
        def work(connection: Connection) -> bool:
            result = connection.execute(update(REMINDERS).where(
                REMINDERS.c.id == reminder_id, REMINDERS.c.conversation_key == conversation_key,
                REMINDERS.c.status == "active").values(status="cancelled", next_fire_at=None))
            return result.rowcount == 1
        return await self._db.run(work)


    async def count_owned(self, owner_keys: Sequence[str]) -> int:
        """Reminders these owners set (`person:<id>`, `identity:<id>`), whatever their state."""
        def work(connection: Connection) -> int:
            return int(connection.execute(select(func.count()).where(
                REMINDERS.c.owner_key.in_(owner_keys))).scalar_one())
        return await self._db.run(work)

    async def delete_owned(self, owner_keys: Sequence[str]) -> int:
        """Delete every reminder these owners set, whatever its state: `forget` leaves nothing of what they asked to
        be reminded of."""
        def work(connection: Connection) -> int:
            return connection.execute(delete(REMINDERS).where(REMINDERS.c.owner_key.in_(owner_keys))).rowcount
        return await self._db.run(work)


def due(connection: Connection, now: datetime, *, limit: int) -> list[Reminder]:
    """Active reminders whose time has come, oldest first."""
    query = (select(REMINDERS).where(REMINDERS.c.status == "active", REMINDERS.c.next_fire_at <= now)
             .order_by(REMINDERS.c.next_fire_at).limit(limit))
    return [_reminder(row) for row in connection.execute(query).all()]


def next_due(connection: Connection) -> datetime | None:
    return connection.execute(select(func.min(REMINDERS.c.next_fire_at))
                              .where(REMINDERS.c.status == "active")).scalar()


def move_on(connection: Connection, reminder: Reminder, next_at: datetime | None) -> bool:
    """Set the reminder's next time (None: it is done), only if nobody moved it since it was read: the caller that
    gets True commits its firing."""
    result = connection.execute(update(REMINDERS).where(and_(
        REMINDERS.c.id == reminder.id, REMINDERS.c.status == "active",
        REMINDERS.c.next_fire_at == reminder.next_fire_at)).values(
            next_fire_at=next_at, status="active" if next_at is not None else "done", fired=REMINDERS.c.fired + 1))
    return result.rowcount == 1


def _reminder(row: Any) -> Reminder:
    return Reminder(**{field.name: row._mapping[field.name] for field in fields(Reminder)})
