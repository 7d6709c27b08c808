"""What the console's overview and runs pages read: the `runs` table with its inbox item, approvals, feedback and
turns, and the last hour's totals. Read-only; a person is named only for operators who hold `transcripts`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.models import (
    AgentRow,
    AgentVersionRow,
    ApprovalRow,
    IdentityRow,
    InboxRow,
    MessageRow,
    ParkedRunRow,
    RunFeedbackRow,
    RunRow,
    utcnow,
)

PAGE = 50
RUN_STATUSES = ("running", "answered", "parked", "failed")


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


class ConsoleQueries:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def last_hour(self) -> LastHour:
        async def work(session: AsyncSession) -> LastHour:
            since = utcnow() - timedelta(hours=1)
            turns, failures, spend = (await session.execute(select(
                func.count(RunRow.id), func.count(RunRow.id).filter(RunRow.status == "failed"),
                func.sum(RunRow.cost_usd)).where(RunRow.started_at >= since))).one()
            return LastHour(turns=turns or 0, failures=failures or 0,
                            spend=None if spend is None else Decimal(spend))
        return await self._db.transaction(work)

    async def runs(self, wanted: RunFilter, *, named: bool, limit: int = PAGE) -> list[RunSummary]:
        async def work(session: AsyncSession) -> list[RunSummary]:
            query = select(RunRow, IdentityRow).outerjoin(IdentityRow, IdentityRow.id == RunRow.identity_id)
            if wanted.bot:
                query = query.where(RunRow.bot_name == wanted.bot)
            if wanted.agent:
                query = query.where(RunRow.agent_name == wanted.agent)
            if wanted.status:
                query = query.where(RunRow.status == wanted.status)
            if wanted.person:
                query = query.where(RunRow.identity_id == await _identity_of(session, wanted.person))
            rows = (await session.execute(query.order_by(RunRow.id.desc()).limit(limit))).all()
            return [_summary(run, identity, named=named) for run, identity in rows]
        return await self._db.transaction(work)

    async def run(self, run_id: int, *, named: bool) -> RunDetail | None:
        async def work(session: AsyncSession) -> RunDetail | None:
            found = (await session.execute(select(RunRow, IdentityRow).outerjoin(
                IdentityRow, IdentityRow.id == RunRow.identity_id).where(RunRow.id == run_id))).one_or_none()
            if found is None:
                return None
            run = _summary(found[0], found[1], named=named)
            return RunDetail(run=run, timeline=await _timeline(session, found[0], run),
                             feedback=await _feedback(session, run_id, named=named),
                             turns=await _turns(session, run_id) if named else [])
        return await self._db.transaction(work)


async def _identity_of(session: AsyncSession, hashed: str) -> int:
    """The identity a person's hash stands for (-1: none), found by hashing every identity's id: ids alone are read,
    so a hundred thousand identities cost one narrow scan."""
    ids = await session.execute(select(IdentityRow.id))
    return next((identity for identity in ids.scalars() if person_hash(identity) == hashed), -1)


def _summary(run: RunRow, identity: IdentityRow | None, *, named: bool) -> RunSummary:
    hashed = person_hash(run.identity_id)
    if identity is not None and named:
        person = f"{identity.display_name} (@{identity.handle})" if identity.handle else identity.display_name
    else:
        person = f"person {hashed}" if hashed else "—"
    return RunSummary(id=run.id, bot=run.bot_name, agent=run.agent_name, agent_version=run.agent_version,
                      model=run.model, status=run.status, person=person, person_hash=hashed, requests=run.requests,
                      input_tokens=run.input_tokens, output_tokens=run.output_tokens, cost=run.cost_usd,
                      started_at=run.started_at, finished_at=run.finished_at, error=run.error)


async def _timeline(session: AsyncSession, row: RunRow, run: RunSummary) -> list[Moment]:
    """Accepted, started, the first text shown, each model response and tool return, each gated call asked and
    decided, the end: what the tables record, in time order."""
    moments: list[Moment] = []
    if row.inbox_id is not None:
        item = await session.get(InboxRow, row.inbox_id)
        if item is not None:
            moments.append(Moment(at=item.created_at, what="accepted",
                                  detail=f"inbox item {item.id}, attempt {item.attempts}"))
    moments.append(Moment(at=row.started_at, what="started", detail=f"{run.agent} v{run.agent_version} on {run.model}"))
    approvals = await session.execute(
        select(ApprovalRow).join(ParkedRunRow, ParkedRunRow.id == ApprovalRow.parked_run_id)
        .where(ParkedRunRow.run_id == row.id).order_by(ApprovalRow.created_at))
    for approval in approvals.scalars():
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


async def _feedback(session: AsyncSession, run_id: int, *, named: bool) -> list[str]:
    rows = await session.execute(select(RunFeedbackRow).where(RunFeedbackRow.run_id == run_id))
    return [f"{'👍' if row.rating == 'good' else '👎'} {row.voter_name if named else 'someone'}"
            for row in rows.scalars()]


async def _turns(session: AsyncSession, run_id: int) -> list[tuple[str, str]]:
    rows = await session.execute(select(MessageRow).where(MessageRow.run_id == run_id).order_by(MessageRow.id))
    return [(row.speaker_name, row.text) for row in rows.scalars()]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentVersion:
    name: str
    version: int
    capabilities: list[str]
    created_at: datetime
    current: bool


async def agent_versions(db: Database) -> list[AgentVersion]:
    """Every applied version of every agent, newest first within an agent, with the ids of what it binds."""
    async def work(session: AsyncSession) -> list[AgentVersion]:
        current = {name: version for name, version in (await session.execute(select(AgentRow.name,
                                                                                      AgentRow.version))).all()}
        rows = await session.execute(select(AgentVersionRow).order_by(AgentVersionRow.agent_name,
                                                                      AgentVersionRow.version.desc()))
        return [AgentVersion(name=row.agent_name, version=row.version, created_at=row.created_at,
                             capabilities=[str(entry.get("id")) for entry in row.spec.get("capabilities", [])],
                             current=current.get(row.agent_name) == row.version) for row in rows.scalars()]
    return await db.transaction(work)
