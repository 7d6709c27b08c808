"""How `reminders` reads the times a model gives: relative, clock times, dates, in the chat's time zone."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from capabilities.reminders.build import moment_of

NOW = datetime(2026, 12, 3, 14, 30, tzinfo=UTC)
"""A Thursday; 15:30 in Berlin."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    when: str
    zone: str
    expected: datetime


CASES = [
    Case(id="in-minutes", when="in 10 minutes", zone="UTC", expected=NOW + timedelta(minutes=10)),
    Case(id="in-a-second", when="in 1 second", zone="UTC", expected=NOW + timedelta(seconds=1)),
    Case(id="in-hours-short", when="in 2h", zone="UTC", expected=NOW + timedelta(hours=2)),
    Case(id="iso-duration", when="PT90M", zone="UTC", expected=NOW + timedelta(minutes=90)),
    Case(id="clock-later-today", when="18:00", zone="Europe/Berlin", expected=datetime(2026, 12, 3, 17, 0, tzinfo=UTC)),
    Case(id="clock-passed-means-tomorrow", when="09:00", zone="Europe/Berlin",
         expected=datetime(2026, 12, 4, 8, 0, tzinfo=UTC)),
    Case(id="tomorrow", when="tomorrow at 9:15", zone="UTC", expected=datetime(2026, 12, 4, 9, 15, tzinfo=UTC)),
    Case(id="date-in-the-zone", when="2026-12-24 18:00", zone="America/New_York",
         expected=datetime(2026, 12, 24, 23, 0, tzinfo=UTC)),
    Case(id="date-with-offset", when="2026-12-24T18:00+01:00", zone="UTC",
         expected=datetime(2026, 12, 24, 17, 0, tzinfo=UTC)),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
def test_a_time_is_read_in_the_chats_zone(case: Case) -> None:
    assert moment_of(case.when, case.zone, NOW) == case.expected


@pytest.mark.parametrize(("when", "says"), [
    ("yesterday-ish", "is not a time I can read"),
    ("2026-01-01 09:00", "is in the past"),
    ("today 09:00", "is in the past"),
    ("in 400 days", "more than a year ahead"),
])
def test_a_time_it_cannot_use_is_refused_with_the_reason(when: str, says: str) -> None:
    answer = moment_of(when, "UTC", NOW)
    assert isinstance(answer, str) and says in answer
