"""When a cron expression fires, read in a time zone, by croniter: five fields (minute to weekday), or six with a
sixth for seconds, or an alias such as `@daily`. The one reading of every schedule and recurring reminder.

croniter (and dateutil beneath it, ~1 MB) loads at the first cron read: a gateway with no schedule and no agent that
sets reminders never reads one, though it checks time zones and writes due times with this module."""

from __future__ import annotations

from datetime import UTC, datetime
from types import ModuleType
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def _croniter() -> ModuleType:
    import croniter

    return croniter


def cron_problem(expression: str) -> str | None:
    """Why `expression` is not a cron expression this gateway reads; None when it is one."""
    fields = expression.split()
    if not (expression.startswith("@") and len(fields) == 1) and len(fields) not in (5, 6):
        return (f"{expression!r} has {len(fields)} fields; write five (minute hour day month weekday, such as "
                "'0 9 * * 1-5'), or six with seconds last ('*/10 * * * * 0')")
    if not _croniter().croniter.is_valid(expression):
        return f"{expression!r} is not a cron expression croniter reads; for example '0 9 * * 1-5' (09:00 on weekdays)"
    return None


def zone_problem(name: str) -> str | None:
    """Why `name` is not an IANA time zone; None when it is one."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return f"{name!r} is not an IANA time zone name such as 'Europe/Warsaw' or 'UTC'"
    return None


def next_after(expression: str, timezone: str, moment: datetime) -> datetime:
    """The first time after `moment` that `expression` fires in `timezone`, in UTC."""
    cron = _croniter()
    try:
        found = cron.croniter(expression, moment.astimezone(ZoneInfo(timezone))).get_next(datetime)
    except cron.CroniterError as exc:  # validated when configured; a stored expression a newer croniter refuses
        raise ValueError(cron_problem(expression) or str(exc)) from exc
    return found.astimezone(UTC)


def latest_until(expression: str, timezone: str, moment: datetime) -> datetime:
    """The last time at or before `moment` that `expression` fires in `timezone`, in UTC: where firings missed
    while no replica ran are coalesced to."""
    local = moment.astimezone(ZoneInfo(timezone))
    croniter = _croniter().croniter
    if croniter.match(expression, local):
        return moment.astimezone(UTC)
    return croniter(expression, local).get_prev(datetime).astimezone(UTC)


def readable(moment: datetime, timezone: str) -> str:
    """A time as people read it, in `timezone`: "09:00 Europe/Berlin, Thu 3 Dec 2026"."""
    local = moment.astimezone(ZoneInfo(timezone))
    return f"{local:%H:%M} {timezone}, {local:%a} {local.day} {local:%b %Y}"
