"""What runs have spent, read from the `runs` table every replica writes, and how that stands against a binding's
`limits`: a bot's, or one person's, tokens and cost since the start of the UTC day and month.

A person is every identity linked to theirs (`gateway/people/identities.py`), or their identity alone. Tokens are
input plus output; cost is what genai-prices priced (a run it could not price counts no cost, and is counted as
unpriced). The budget step (`steps/budget.py`) and the usage report (`usage_report.py`) read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Literal

from sqlalchemy import ColumnElement, Connection, and_, case, func, select

from adapters.base import Speaker
from gateway.config.schema import Limits
from storage.tables import IDENTITIES, RUNS

Scope = Literal["person", "binding"]
Period = Literal["day", "month"]
Measure = Literal["tokens", "cost"]



@dataclass(frozen=True, slots=True, kw_only=True)
class Periods:
    """The UTC day and month a moment falls in."""

    now: datetime

    @property
    def day(self) -> datetime:
        return self.now.replace(hour=0, minute=0, second=0, microsecond=0)

    @property
    def month(self) -> datetime:
        return self.day.replace(day=1)

    def start(self, period: Period) -> datetime:
        return self.day if period == "day" else self.month

    def end(self, period: Period) -> datetime:
        """When `period` resets: the next UTC midnight, or the first of next month."""
        if period == "day":
            return self.day + timedelta(days=1)
        return (self.month + timedelta(days=32)).replace(day=1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Spent:
    """Tokens and cost of runs since a period's start."""

    tokens: int = 0
    cost: Decimal = Decimal(0)
    unpriced: int = 0
    """Runs that used the model but that genai-prices could not price: their cost is not in `cost`."""

    def of(self, measure: Measure) -> int | Decimal:
        return self.tokens if measure == "tokens" else self.cost


@dataclass(frozen=True, slots=True, kw_only=True)
class Spending:
    """Today's and this month's (today's included)."""

    day: Spent
    month: Spent

    def of(self, period: Period) -> Spent:
        return self.day if period == "day" else self.month


@dataclass(frozen=True, slots=True, kw_only=True)
class Limit:
    scope: Scope
    period: Period
    measure: Measure
    allowed: int | Decimal

    @property
    def field(self) -> str:
        """Its place in the config, as `gateway.yaml` names it."""
        unit = "tokens" if self.measure == "tokens" else "cost"
        suffix = "_usd" if self.measure == "cost" else ""
        return f"per_{self.scope}.{unit}_per_{self.period}{suffix}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """One limit, what its scope has used of it this period, and when the period resets."""

    limit: Limit
    used: int | Decimal
    resets_at: datetime

    @property
    def reached(self) -> bool:
        return self.used >= self.limit.allowed

    @property
    def left(self) -> int | Decimal:
        return max(self.limit.allowed - self.used, 0)


def limits_of(limits: Limits) -> tuple[Limit, ...]:
    """The limits a binding sets, the person's first, days before months, tokens before cost."""
    person, binding = limits.per_person, limits.per_binding
    table: tuple[tuple[Scope, Period, Measure, float | None], ...] = (
        ("person", "day", "tokens", person.tokens_per_day), ("person", "day", "cost", person.cost_per_day_usd),
        ("person", "month", "tokens", person.tokens_per_month),
        ("person", "month", "cost", person.cost_per_month_usd),
        ("binding", "month", "tokens", binding.tokens_per_month),
        ("binding", "month", "cost", binding.cost_per_month_usd))
    return tuple(Limit(scope=scope, period=period, measure=measure,
                       allowed=int(value) if measure == "tokens" else Decimal(str(value)))
                 for scope, period, measure, value in table if value is not None)


def standings(limits: Limits, connection: Connection, *, bot: str, speaker: Speaker,
              periods: Periods) -> list[Standing]:
    """Every limit the binding sets, against what was spent in this bot's chats: by the speaker (as one person) for
    `per_person`, by everyone for `per_binding`. Each scope is read only when the binding limits it."""
    wanted = limits_of(limits)
    spending: dict[Scope, Spending] = {}
    if any(limit.scope == "person" for limit in wanted):
        spending["person"] = spent(connection, periods, bot=bot, identities=identities_of(connection, speaker))
    if any(limit.scope == "binding" for limit in wanted):
        spending["binding"] = spent(connection, periods, bot=bot)
    return [Standing(limit=limit, used=spending[limit.scope].of(limit.period).of(limit.measure),
                     resets_at=periods.end(limit.period)) for limit in wanted]


def identities_of(connection: Connection, speaker: Speaker) -> tuple[int, ...]:
    """The speaker's identity, and every identity linked to the same person; none for a speaker never stored."""
    row = connection.execute(select(IDENTITIES.c.id, IDENTITIES.c.person_id).where(
        IDENTITIES.c.platform == speaker.platform, IDENTITIES.c.workspace == speaker.workspace,
        IDENTITIES.c.platform_user_id == speaker.platform_user_id)).first()
    if row is None:
        return ()
    if row.person_id is None:
        return (int(row.id),)
    linked = connection.execute(select(IDENTITIES.c.id).where(IDENTITIES.c.person_id == row.person_id)).scalars()
    return tuple(int(identity_id) for identity_id in linked)


def spent(connection: Connection, periods: Periods, *, bot: str,
          identities: Sequence[int] | None = None) -> Spending:
    """A bot's spending today and this month: everyone's, or only the runs of `identities` (one person)."""
    where = [RUNS.c.bot_name == bot, RUNS.c.started_at >= periods.month]
    if identities is not None:
        if not identities:
            return Spending(day=Spent(), month=Spent())
        where.append(RUNS.c.identity_id.in_(identities))
    row = connection.execute(select(*_sums(periods.day)).where(*where)).one()
    return _spending(row)


def spent_per_agent(connection: Connection, periods: Periods, *, identities: Sequence[int]) -> dict[str, Spending]:
    """One person's spending today and this month with each agent, through every bot of the gateway."""
    if not identities:
        return {}
    rows = connection.execute(select(RUNS.c.agent_name, *_sums(periods.day))
                              .where(RUNS.c.identity_id.in_(identities), RUNS.c.started_at >= periods.month)
                              .group_by(RUNS.c.agent_name).order_by(RUNS.c.agent_name)).all()
    return {str(row.agent_name): _spending(row) for row in rows}


def _sums(day: datetime) -> list[ColumnElement[object]]:
    """Tokens, cost and unpriced runs, this month's and today's, in one pass over the month's runs."""
    today = RUNS.c.started_at >= day
    tokens = RUNS.c.input_tokens + RUNS.c.output_tokens
    unpriced = and_(RUNS.c.cost_usd.is_(None), RUNS.c.requests > 0)
    return [func.coalesce(func.sum(tokens), 0).label("tokens"),
            func.coalesce(func.sum(case((today, tokens), else_=0)), 0).label("day_tokens"),
            func.sum(RUNS.c.cost_usd).label("cost"),
            func.sum(case((today, RUNS.c.cost_usd), else_=None)).label("day_cost"),
            func.coalesce(func.sum(case((unpriced, 1), else_=0)), 0).label("unpriced"),
            func.coalesce(func.sum(case((and_(today, unpriced), 1), else_=0)), 0).label("day_unpriced")]


def _spending(row: object) -> Spending:
    def figure(name: str) -> int:
        return int(getattr(row, name) or 0)

    def money(name: str) -> Decimal:
        value = getattr(row, name)
        return Decimal(0) if value is None else Decimal(str(value))

    return Spending(day=Spent(tokens=figure("day_tokens"), cost=money("day_cost"), unpriced=figure("day_unpriced")),
                    month=Spent(tokens=figure("tokens"), cost=money("cost"), unpriced=figure("unpriced")))
