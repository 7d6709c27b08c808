"""The `usage` report's figures: one person's tokens and cost today and this month with each agent (linked identities
as one person, every bot), and where they stand against the asking bot's limits (its own chats only)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal

from sqlalchemy import insert

from adapters.base import Speaker
from gateway.agents.bindings import AgentDefinition, Binding
from gateway.config.schema import AgentSpec, BindingSpec
from gateway.pipeline.usage_report import usage_report
from storage.db import Database
from storage.models import ConversationRow, IdentityRow, PersonRow, RunRow

NOW = datetime(2025, 7, 15, 12, 30, tzinfo=UTC)
TODAY, EARLIER, LAST_MONTH = (datetime(2025, 7, 15, 9, tzinfo=UTC), datetime(2025, 7, 2, tzinfo=UTC),
                              datetime(2025, 6, 30, 23, 59, tzinfo=UTC))
ALICE = Speaker(platform="telegram", platform_user_id="1", display_name="Alice")


def bound(limits: Mapping[str, object] | None) -> Binding:
    agent = AgentDefinition(name="helper", version=1, spec=AgentSpec(name="helper", model="test"))
    return Binding(bot_name="team", agent=agent, spec=BindingSpec.model_validate({"limits": limits}))


async def spending(db: Database) -> None:
    """Alice on Telegram, linked to her Slack account; Bob; their runs on bots `team` and `other`."""
    async with db.session() as session:
        await session.execute(insert(PersonRow), [{"id": 1, "display_name": "Alice"}])
        await session.execute(insert(IdentityRow), [
            {"id": 1, "platform": "telegram", "platform_user_id": "1", "display_name": "Alice", "person_id": 1},
            {"id": 2, "platform": "slack", "workspace": "T1", "platform_user_id": "U1", "display_name": "Alice",
             "person_id": 1},
            {"id": 3, "platform": "telegram", "platform_user_id": "3", "display_name": "Bob"}])
        await session.execute(insert(ConversationRow), [{"id": 1, "key": "k", "bot_name": "team",
                                                         "platform": "telegram", "channel_id": "1", "is_direct": True}])
        runs = [("team", "helper", 1, TODAY, 60, 40, Decimal("0.01")),
                ("other", "helper", 2, TODAY, 30, 20, Decimal("0.005")),   # Alice too, through another bot
                ("team", "helper", 1, EARLIER, 600, 400, Decimal("0.1")),
                ("team", "helper", 1, LAST_MONTH, 6000, 4000, Decimal("1")),  # before this month: not counted
                ("team", "sketcher", 2, TODAY, 15, 5, None),  # Alice on Slack, on a model without a known price
                ("team", "helper", 3, TODAY, 300, 200, Decimal("0.05"))]       # Bob
        await session.execute(insert(RunRow), [
            {"conversation_id": 1, "bot_name": bot, "agent_name": agent, "agent_version": 1, "model": "m",
             "identity_id": identity, "status": "answered", "requests": 1, "input_tokens": tokens_in,
             "output_tokens": tokens_out, "cost_usd": cost, "started_at": started}
            for bot, agent, identity, started, tokens_in, tokens_out, cost in runs])


async def test_the_report_gives_the_persons_spending_per_agent_and_what_is_left_of_each_limit(db: Database) -> None:
    await spending(db)
    limits = {"per_person": {"tokens_per_day": 1000, "cost_per_month_usd": 1},
              "per_binding": {"tokens_per_month": 10000}}
    report = await usage_report(db, bound(limits), ALICE, now=NOW)
    assert report == "\n".join([
        "**Your usage** (UTC: today since 00:00, this month since 1 July)",
        "",
        "- `helper`: today 150 tokens, $0.0150; this month 1,150 tokens, $0.1150",
        "- `sketcher`: today 20 tokens, $0.00; this month 20 tokens, $0.00 (1 run(s) on a model without a known "
        "price are not in the cost)",
        "",
        "**Limits of this bot**",
        "",
        "- 1,000 tokens a day for you (`per_person.tokens_per_day`): 120 tokens used, 880 tokens left; resets at "
        "00:00 UTC (in 11 h 30 min)",
        "- $1.00 a month for you (`per_person.cost_per_month_usd`): $0.1100 used, $0.8900 left; resets on 1 August at "
        "00:00 UTC",
        "- 10,000 tokens a month for everyone together (`per_binding.tokens_per_month`): 1,620 tokens used, 8,380 "
        "tokens left; resets on 1 August at 00:00 UTC",
    ])


async def test_without_limits_the_report_gives_the_spending_alone(db: Database) -> None:
    await spending(db)
    report = await usage_report(db, bound(None), ALICE, now=NOW)
    assert "Limits" not in report and "- `helper`: today 150 tokens" in report


async def test_someone_who_never_asked_has_used_nothing(db: Database) -> None:
    stranger = Speaker(platform="telegram", platform_user_id="99", display_name="Stranger")
    report = await usage_report(db, bound({"per_person": {"tokens_per_day": 10}}), stranger, now=NOW)
    assert report.splitlines()[2] == "You have not used any agent of this gateway this month."
    assert "0 tokens used, 10 tokens left" in report
