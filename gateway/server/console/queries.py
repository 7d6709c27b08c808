"""What the console's overview and runs pages read: the `runs` table with its inbox item, approvals, feedback and
turns, and the last hour's totals. Read-only; a person is named only for operators who hold `transcripts`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, Row, func, select

from storage.db import Database
from storage.tables import (
    AGENT_VERSIONS,
    AGENTS,
    APPROVALS,
    IDENTITIES,
    INBOX,
    MESSAGES,
    PARKED_RUNS,
    RUN_FEEDBACK,
    RUNS,
    utcnow,
)

PAGE = 50
RUN_STATUSES = ("running", "answered", "parked", "stopped", "failed")


@dataclass(frozen=True, slots=True, kw_only=True)
class LastHour:
    turns: int
    failures: int
    spend: Decimal | None
    """None: no run of the hour could be priced."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFilter:
    bot: str = ""
    agent: str = ""
    status: str = ""
    person: str = ""
    """A person's hash as the list shows it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    id: int
    bot: str
    agent: str
    agent_version: int
    model: str
    status: str
    person: str
    """Hashed (`person 1a2b3c4d`) unless the operator holds `transcripts`."""
    person_hash: str
    requests: int
    input_tokens: int
    output_tokens: int
    cost: Decimal | None
    started_at: datetime
    finished_at: datetime | None
    error: str | None

    @property
    def latency(self) -> float | None:
        return None if self.finished_at is None else (self.finished_at - self.started_at).total_seconds()


@dataclass(frozen=True, slots=True, kw_only=True)
class Moment:
    at: datetime
    what: str
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunDetail:
    run: RunSummary
    timeline: list[Moment] = field(default_factory=list[Moment])
    feedback: list[str] = field(default_factory=list[str])
    turns: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """(speaker, text) of the run's turns: only for operators who hold `transcripts`."""


def person_hash(identity_id: int | None) -> str:
    """A stable pseudonym for a speaker: filters and links work without naming anyone."""
    return "" if identity_id is None else hashlib.sha256(f"person:{identity_id}".encode()).hexdigest()[:10]


_RUN_AND_SPEAKER = select(RUNS, IDENTITIES.c.display_name.label("speaker_name"),
                          IDENTITIES.c.handle.label("speaker_handle")).outerjoin(
    IDENTITIES, IDENTITIES.c.id == RUNS.c.identity_id)
"""A run with the name and handle of who spoke (None for both when no identity is known)."""


class ConsoleQueries:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def last_hour(self) -> LastHour:
        def work(connection: Connection) -> LastHour:
            since = utcnow() - timedelta(hours=1)
            turns, failures, spend = connection.execute(select(
                func.count(RUNS.c.id), func.count(RUNS.c.id).filter(RUNS.c.status == "failed"),
                func.sum(RUNS.c.cost_usd)).where(RUNS.c.started_at >= since)).one()
            return LastHour(turns=turns or 0, failures=failures or 0,
                            spend=None if spend is None else Decimal(spend))
        return await self._db.run(work, single=True)

    async def runs(self, wanted: RunFilter, *, named: bool, limit: int = PAGE) -> list[RunSummary]:
        def work(connection: Connection) -> list[RunSummary]:
            query = _RUN_AND_SPEAKER
            if wanted.bot:
                query = query.where(RUNS.c.bot_name == wanted.bot)
            if wanted.agent:
                query = query.where(RUNS.c.agent_name == wanted.agent)
            if wanted.status:
                query = query.where(RUNS.c.status == wanted.status)
            if wanted.person:
                query = query.where(RUNS.c.identity_id == _identity_of(connection, wanted.person))
            rows = connection.execute(query.order_by(RUNS.c.id.desc()).limit(limit))
            return [_summary(row, named=named) for row in rows]
        return await self._db.run(work, single=not wanted.person)

    async def run(self, run_id: int, *, named: bool) -> RunDetail | None:
        def work(connection: Connection) -> RunDetail | None:
            found = connection.execute(_RUN_AND_SPEAKER.where(RUNS.c.id == run_id)).one_or_none()
            if found is None:
                return None
            run = _summary(found, named=named)
            return RunDetail(run=run, timeline=_timeline(connection, found, run),
                             feedback=_feedback(connection, run_id, named=named),
                             turns=_turns(connection, run_id) if named else [])
        return await self._db.run(work)


def _identity_of(connection: Connection, hashed: str) -> int:
    """The identity a person's hash stands for (-1: none), found by hashing every identity's id: ids alone are read,
    so a hundred thousand identities cost one narrow scan."""
    ids = connection.execute(select(IDENTITIES.c.id)).scalars()
    return next((identity for identity in ids if person_hash(identity) == hashed), -1)


def _summary(run: Row[Any], *, named: bool) -> RunSummary:
    """`run`: a row of `_RUN_AND_SPEAKER`."""
    hashed = person_hash(run.identity_id)
    if run.speaker_name is not None and named:
        person = f"{run.speaker_name} (@{run.speaker_handle})" if run.speaker_handle else run.speaker_name
    else:
        person = f"person {hashed}" if hashed else "—"
    return RunSummary(id=run.id, bot=run.bot_name, agent=run.agent_name, agent_version=run.agent_version,
                      model=run.model, status=run.status, person=person, person_hash=hashed, requests=run.requests,
                      input_tokens=run.input_tokens, output_tokens=run.output_tokens, cost=run.cost_usd,
                      started_at=run.started_at, finished_at=run.finished_at, error=run.error)


def _timeline(connection: Connection, row: Row[Any], run: RunSummary) -> list[Moment]:
    """Accepted, started, the first text shown, each model response and tool return, each gated call asked and
    decided, the end: what the tables record, in time order."""
    moments: list[Moment] = []
    if row.inbox_id is not None:
        item = connection.execute(select(INBOX.c.id, INBOX.c.created_at, INBOX.c.attempts)
                                  .where(INBOX.c.id == row.inbox_id)).first()
        if item is not None:
            moments.append(Moment(at=item.created_at, what="accepted",
                                  detail=f"inbox item {item.id}, attempt {item.attempts}"))
    moments.append(Moment(at=row.started_at, what="started", detail=f"{run.agent} v{run.agent_version} on {run.model}"))
    approvals = connection.execute(
        select(APPROVALS).join(PARKED_RUNS, PARKED_RUNS.c.id == APPROVALS.c.parked_run_id)
        .where(PARKED_RUNS.c.run_id == row.id).order_by(APPROVALS.c.created_at))
    for approval in approvals:
        moments.append(Moment(at=approval.created_at, what="tool asked for approval", detail=approval.tool_name))
        if approval.decided_at is not None:
            by = f" by {approval.decided_by}" if approval.decided_by else ""
            moments.append(Moment(at=approval.decided_at, what=f"approval {approval.status}",
                                  detail=f"{approval.tool_name}{by}"))
    if row.first_shown_at is not None:
        moments.append(Moment(at=row.first_shown_at, what="first text shown", detail="in the chat"))
    moments += [Moment(at=datetime.fromisoformat(step["at"]), what=step["what"], detail=step["detail"])
                for step in row.steps or []]
    if row.finished_at is not None:
        usage = f"{row.requests} model request(s), {row.input_tokens} in / {row.output_tokens} out"
        moments.append(Moment(at=row.finished_at, what=row.status, detail=row.error or usage))
    return sorted(moments, key=lambda moment: moment.at)


def _feedback(connection: Connection, run_id: int, *, named: bool) -> list[str]:
    rows = connection.execute(select(RUN_FEEDBACK.c.rating, RUN_FEEDBACK.c.voter_name)
                              .where(RUN_FEEDBACK.c.run_id == run_id))
    return [f"{'👍' if row.rating == 'good' else '👎'} {row.voter_name if named else 'someone'}" for row in rows]


def _turns(connection: Connection, run_id: int) -> list[tuple[str, str]]:
    rows = connection.execute(select(MESSAGES.c.speaker_name, MESSAGES.c.text).where(MESSAGES.c.run_id == run_id)
                              .order_by(MESSAGES.c.id))
    return [(row.speaker_name, row.text) for row in rows]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentVersion:
    name: str
    version: int
    capabilities: list[str]
    created_at: datetime
    current: bool


async def agent_versions(db: Database) -> list[AgentVersion]:
    """Every applied version of every agent, newest first within an agent, with the ids of what it binds."""
    def work(connection: Connection) -> list[AgentVersion]:
        current = {name: version for name, version in connection.execute(select(AGENTS.c.name, AGENTS.c.version))}
        rows = connection.execute(select(AGENT_VERSIONS.c.agent_name, AGENT_VERSIONS.c.version,
                                         AGENT_VERSIONS.c.created_at, AGENT_VERSIONS.c.spec)
                                  .order_by(AGENT_VERSIONS.c.agent_name, AGENT_VERSIONS.c.version.desc()))
        return [AgentVersion(name=row.agent_name, version=row.version, created_at=row.created_at,
                             capabilities=[str(entry.get("id")) for entry in row.spec.get("capabilities", [])],
                             current=current.get(row.agent_name) == row.version) for row in rows]
    return await db.run(work)
