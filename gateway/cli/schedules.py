"""`gateway schedules`: the operator's schedules of gateway.yaml with their next firing, then the reminders agents
set that are still to fire, read from the database every replica shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select

from gateway.cli.database import existing_database, sqlite_file
from gateway.config.schema import ScheduleSpec
from storage.recurrence import next_after, readable
from storage.reminders import Reminder, Reminders
from storage.tables import SCHEDULE_MARKS, utcnow


@dataclass(frozen=True, slots=True, kw_only=True)
class Listing:
    marks: dict[str, tuple[str, str, datetime]]
    """Each schedule's stored mark: (cron, time zone, next firing), as the replicas keep it."""
    reminders: list[Reminder]


async def read(database_url: str) -> Listing | None:
    """What the database holds; None when there is no database yet (nothing has run)."""
    path = sqlite_file(database_url)
    if path is not None and not path.exists():
        return None
    def stored_marks(connection: Connection) -> dict[str, tuple[str, str, datetime]]:
        rows = connection.execute(select(SCHEDULE_MARKS))
        return {row.name: (row.cron, row.timezone, row.next_fire_at) for row in rows}
    async with existing_database(database_url) as db:
        return Listing(marks=await db.run(stored_marks, single=True), reminders=await Reminders(db).active())


def lines(schedules: Sequence[ScheduleSpec], listing: Listing | None) -> list[str]:
    """One line per schedule, then one per reminder."""
    now = utcnow()
    marks = listing.marks if listing is not None else {}
    out = []
    for spec in schedules:
        mark = marks.get(spec.name)
        started = mark is not None and mark[:2] == (spec.cron, spec.timezone)
        due = mark[2] if mark is not None and started else next_after(spec.cron, spec.timezone, now)
        what = f"runs {spec.prompt!r}" if spec.prompt else f"posts {spec.text!r}"
        note = "" if started else " (from its first start)"
        out.append(f"schedule {spec.name:<16} next {readable(due, spec.timezone)}{note}  {spec.cron!r}  "
                   f"bot {spec.bot} chat {spec.chat}{' thread ' + spec.thread if spec.thread else ''}  "
                   f"missed: {spec.missed}  {what[:60]}")
    for reminder in listing.reminders if listing is not None else []:
        due = readable(reminder.next_fire_at, reminder.timezone) if reminder.next_fire_at else "-"
        repeats = f"  repeats {reminder.recurrence!r}" if reminder.recurrence else ""
        speaker = str(reminder.speaker.get("display_name") or "")
        out.append(f"reminder #{reminder.id:<15} next {due}{repeats}  bot {reminder.bot_name} "
                   f"[{reminder.conversation_key}]  set by {speaker}  {reminder.mode} {reminder.text[:60]!r}")
    return out or ["no schedules in the config and no reminders set"]
