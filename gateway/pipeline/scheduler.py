"""Fires what is due: the operator's schedules (`schedules:` in gateway.yaml) and the reminders agents set.

Every replica runs this loop where something can fall due: the config has `schedules:`, or an agent binds a
capability that sets reminders (`CapabilityDef.fires_later`); elsewhere no replica ticks. A firing is committed as an
inbox item in the same transaction as the write that moves its schedule on, and that write is a compare-and-swap on
the time it read: of two replicas reading the same due time, one moves it on and stores the firing, the other changes
nothing. The item's unique logical id (source and due time) holds the same promise on its own, so a firing is stored
once whatever the timing. What was due while no replica ran is one late firing (its time said), or skipped where the
schedule says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, select, update

from adapters.protocols import Addresses
from gateway.config.schema import ScheduleSpec
from gateway.pipeline.firings import Firing, Mode, address_from, late_note, speaker_from, stamp
from gateway.pipeline.inbox import add_item
from gateway.pipeline.metrics import GatewayMetrics
from storage.db import Database, insert_for
from storage.recurrence import latest_until, next_after, readable
from storage.reminders import Reminder, due, move_on, next_due
from storage.tables import SCHEDULE_MARKS as MARKS
from storage.tables import utcnow

log = logging.getLogger(__name__)

LATE_AFTER = timedelta(minutes=1)
"""A firing found due longer ago than this was missed (no replica ran at its time): delivered late, or skipped."""
BATCH = 100
"""Reminders fired in one transaction at most; the rest in the next round, at once."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Fired:
    """One firing this replica stored (or skipped), for the metrics once its transaction committed."""

    bot: str
    kind: str
    outcome: str


class Scheduler:
    def __init__(self, *, db: Database, adapters: Mapping[str, Addresses], schedules: Sequence[ScheduleSpec],
                 metrics: GatewayMetrics, on_fired: Callable[[], None], late_after: timedelta = LATE_AFTER) -> None:
        """`on_fired`: told after a firing is committed (the worker's wake-up)."""
        self._db = db
        self._adapters = adapters
        self._schedules = {spec.name: spec for spec in schedules}
        self._metrics = metrics
        self._on_fired = on_fired
        self._late_after = late_after

    async def start(self) -> None:
        """Each schedule's mark, written by the first replica to start: its next time from now. A schedule whose
        cron or time zone changed starts again from now; one unchanged keeps its mark, so what was missed while no
        replica ran is found."""
        await self._db.run(self._sync_marks)

    def _sync_marks(self, connection: Connection) -> None:
        now = utcnow()
        stored = {row.name: row for row in connection.execute(select(MARKS)).all()}
        insert = insert_for(connection.dialect.name)
        for name, spec in self._schedules.items():
            row = stored.get(name)
            values = {"cron": spec.cron, "timezone": spec.timezone,
                      "next_fire_at": next_after(spec.cron, spec.timezone, now)}
            if row is None:
                connection.execute(insert(MARKS).values(name=name, **values)
                                   .on_conflict_do_nothing(index_elements=["name"]))
            elif (row.cron, row.timezone) != (spec.cron, spec.timezone):
                connection.execute(update(MARKS).where(MARKS.c.name == name).values(**values))

    async def fire_due(self) -> None:
        """Store every firing that is due, in one transaction; then count them and wake the worker."""
        fired = await self._db.run(self._fire)
        for each in fired:
            self._metrics.fired(each.bot, each.kind, each.outcome)
        if any(each.outcome != "skipped" for each in fired):
            self._on_fired()

    async def seconds_until_due(self) -> float | None:
        """Until the soonest schedule or reminder falls due (a reminder set on another replica is seen at the next
        round)."""
        def work(connection: Connection) -> datetime | None:
            marks = [row.next_fire_at for row in connection.execute(select(MARKS)).all()
                     if row.name in self._schedules]
            soonest = [moment for moment in (*marks, next_due(connection)) if moment is not None]
            return min(soonest, default=None)
        moment = await self._db.run(work)
        return None if moment is None else (moment - utcnow()).total_seconds()

    def _fire(self, connection: Connection) -> list[Fired]:
        now = utcnow()
        fired: list[Fired] = []
        for row in connection.execute(select(MARKS).where(MARKS.c.next_fire_at <= now)).all():
            spec = self._schedules.get(row.name)
            if spec is not None and (outcome := self._fire_schedule(connection, spec, row.next_fire_at, now)):
                fired.append(Fired(bot=spec.bot, kind="schedule", outcome=outcome))
        for reminder in due(connection, now, limit=BATCH):
            if outcome := self._fire_reminder(connection, reminder, now):
                fired.append(Fired(bot=reminder.bot_name, kind="reminder", outcome=outcome))
        return fired

    def _fire_schedule(self, connection: Connection, spec: ScheduleSpec, due_at: datetime, now: datetime) -> str | None:
        """The schedule's firing at `due_at` (or, missed, at the last time it was due), and its mark moved on; None
        when another replica moved it first, or the bot cannot name its chat yet (tried again next round)."""
        adapter = self._adapters.get(spec.bot)
        address = adapter.address_of(spec.chat, spec.thread) if adapter is not None else None
        if address is None:
            return None
        late = now - due_at > self._late_after
        fire_at = latest_until(spec.cron, spec.timezone, now) if late else due_at
        moved = connection.execute(update(MARKS).where(MARKS.c.name == spec.name, MARKS.c.next_fire_at == due_at)
                                   .values(next_fire_at=next_after(spec.cron, spec.timezone, now if late else due_at)))
        if moved.rowcount != 1:
            return None
        if late and spec.missed == "skip":
            log.info("schedule %r: missed the firing due at %s, skipped", spec.name, fire_at.isoformat())
            return "skipped"
        mode: Mode = "run" if spec.prompt is not None else "message"
        text = (spec.prompt or "") if mode == "run" else (spec.text or "")
        if mode == "run":
            text = (f"Scheduled run {spec.name!r} ({spec.cron}, {spec.timezone}), due at "
                    f"{readable(fire_at, spec.timezone)}:\n{text}")
        if late:
            text = f"{text}\n\n{late_note(fire_at, spec.timezone)}"
        firing = Firing(source=f"schedule:{spec.name}", address=address, speaker=None, mode=mode, text=text,
                        due_at=fire_at)
        stored = add_item(connection, logical_id=f"schedule:{spec.name}:{stamp(fire_at)}", bot_name=spec.bot,
                          conversation_key=address.conversation_key, payload=firing.payload())
        return ("late" if late else "fired") if stored else None

    def _fire_reminder(self, connection: Connection, reminder: Reminder, now: datetime) -> str | None:
        """The reminder's firing, and the reminder moved on (a recurring one to its next time, a one-off done)."""
        due_at = reminder.next_fire_at
        assert due_at is not None  # `due` reads only reminders with a time
        late = now - due_at > self._late_after
        recurrence = reminder.recurrence
        fire_at = latest_until(recurrence, reminder.timezone, now) if late and recurrence else due_at
        if not move_on(connection, reminder, next_after(recurrence, reminder.timezone, now if late else due_at)
                       if recurrence else None):
            return None
        speaker = speaker_from(reminder.speaker)
        address = address_from(reminder.address)
        if reminder.mode == "run":
            text = (f"A reminder {speaker.display_name} set on {readable(reminder.created_at, reminder.timezone)} "
                    f"is due now ({readable(fire_at, reminder.timezone)}). Do what it asks, for them, in this chat:"
                    f"\n{reminder.text}")
        else:
            whom = "" if address.is_direct else f" for {speaker.display_name}"
            text = f"⏰ Reminder{whom}: {reminder.text}"
        if late:
            text = f"{text}\n\n{late_note(fire_at, reminder.timezone)}"
        firing = Firing(source=f"reminder:{reminder.id}", address=address, speaker=speaker,
                        mode="run" if reminder.mode == "run" else "message", text=text, due_at=fire_at)
        stored = add_item(connection, logical_id=f"reminder:{reminder.id}:{stamp(fire_at)}",
                          bot_name=reminder.bot_name, conversation_key=reminder.conversation_key,
                          payload=firing.payload())
        return ("late" if late else "fired") if stored else None
