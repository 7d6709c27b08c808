"""The `usage` report: one person's tokens and cost today and this month with each agent, and the limits of the
bot they asked, with what is used and left of each. Markdown; days and months in UTC."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from functools import partial

from sqlalchemy import Connection

from adapters.base import Speaker
from gateway.agents.bindings import Binding
from gateway.pipeline.spend import Measure, Periods, Spending, Standing, identities_of, spent_per_agent, standings
from storage.db import Database
from storage.tables import utcnow

NO_USE = "You have not used any agent of this gateway this month."
UNPRICED = " ({runs} run(s) on a model without a known price are not in the cost)"


async def usage_report(db: Database, binding: Binding, speaker: Speaker, *, now: datetime | None = None) -> str:
    """What `speaker` (as one person, across linked identities) spent, and where they stand against `binding`'s
    limits: the answer to `usage` sent to `binding`'s bot."""
    periods = Periods(now=now or utcnow())
    agents, limits = await db.run(partial(_read, binding, speaker, periods))
    lines = [f"**Your usage** (UTC: today since 00:00, this month since {periods.month:%-d %B})", ""]
    lines += [_agent_line(name, spending) for name, spending in agents.items()] or [NO_USE]
    if limits:
        lines += ["", "**Limits of this bot**", ""]
        lines += [_limit_line(standing, now=periods.now) for standing in limits]
    return "\n".join(lines)


def _read(binding: Binding, speaker: Speaker, periods: Periods,
          connection: Connection) -> tuple[dict[str, Spending], list[Standing]]:
    agents = spent_per_agent(connection, periods, identities=identities_of(connection, speaker))
    limits = binding.spec.limits
    found = [] if limits is None else standings(limits, connection, bot=binding.bot_name, speaker=speaker,
                                                periods=periods)
    return agents, found


def _agent_line(name: str, spending: Spending) -> str:
    day, month = spending.day, spending.month
    unpriced = UNPRICED.format(runs=month.unpriced) if month.unpriced else ""
    return (f"- `{name}`: today {amount(day.tokens, 'tokens')}, {amount(day.cost, 'cost')}; "
            f"this month {amount(month.tokens, 'tokens')}, {amount(month.cost, 'cost')}{unpriced}")


def _limit_line(standing: Standing, *, now: datetime) -> str:
    limit = standing.limit
    whose = "you" if limit.scope == "person" else "everyone together"
    period = "a day" if limit.period == "day" else "a month"
    return (f"- {amount(limit.allowed, limit.measure)} {period} for {whose} (`{limit.field}`): "
            f"{amount(standing.used, limit.measure)} used, {amount(standing.left, limit.measure)} left; "
            f"resets {resets(standing, now=now)}")


def amount(value: int | Decimal, measure: Measure) -> str:
    """`12,345 tokens`, `$4.20`, or `$0.0031` below a dollar (where cents would round a run's cost away)."""
    if measure == "tokens":
        return f"{int(value):,} tokens"
    money = Decimal(value)
    if money and abs(money) < 1:
        return f"${money:.4f}"
    return f"${money:,.2f}"


def resets(standing: Standing, *, now: datetime) -> str:
    """A day's limit: `at 00:00 UTC (in 3 h 12 min)`; a month's: `on 1 August at 00:00 UTC`."""
    at = standing.resets_at
    if standing.limit.period == "month":
        return f"on {at:%-d %B} at {at:%H:%M} UTC"
    hours, minutes = divmod(max(0, int((at - now).total_seconds())) // 60, 60)
    return f"at {at:%H:%M} UTC (in {hours} h {minutes} min)"
