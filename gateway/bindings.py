"""The binding table: which agent answers for each bot, with what instructions, access and limits."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from adapters.base import Speaker
from gateway.config import AgentSpec, BindingSpec, BotSpec, GatewayConfig, RateLimit
from storage.db import Database
from storage.models import AgentRow, BindingRow, BotRow, utcnow


def is_listed(speaker: Speaker, entries: Iterable[str]) -> bool:
    """True when a binding's list (allowlist, approvers) names the speaker by user id or `@handle`.

    Compared without case: handles are case-insensitive, and Slack ids are upper case (`U0123ABCD`).
    """
    names = {entry.lower() for entry in entries}
    return speaker.platform_user_id.lower() in names or (
        speaker.handle is not None and f"@{speaker.handle.lower()}" in names)


class UnknownBot(LookupError):
    """No bot of that name has been applied."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentDefinition:
    name: str
    version: int
    spec: AgentSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Binding:
    bot_name: str
    agent: AgentDefinition
    spec: BindingSpec

    @property
    def rate_limit(self) -> RateLimit | None:
        return self.spec.rate_limit


@dataclass(frozen=True, slots=True, kw_only=True)
class ApplyReport:
    agents: dict[str, int]
    """Agent name → version after applying (a changed spec gets a new version)."""
    bots: list[str]


class BindingStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def apply(self, config: GatewayConfig) -> ApplyReport:
        """Upsert agents, bots and bindings from a validated config, in one transaction."""
        async def work(session: AsyncSession) -> ApplyReport:
            versions = {agent.name: await _upsert_agent(session, agent) for agent in config.agents}
            for bot in config.bots:
                await _upsert_bot(session, bot, self._db.dialect)
            return ApplyReport(agents=versions, bots=[b.name for b in config.bots])
        return await self._db.transaction(work)

    async def load(self, bot_name: str) -> Binding:
        async def work(session: AsyncSession) -> Binding:
            row = (await session.execute(
                select(BindingRow, AgentRow).join(AgentRow, AgentRow.name == BindingRow.agent_name)
                .where(BindingRow.bot_name == bot_name))).first()
            if row is None:
                raise UnknownBot(f"no binding for bot {bot_name!r}; run `gateway apply`")
            binding, agent = row
            definition = AgentDefinition(name=agent.name, version=agent.version,
                                         spec=AgentSpec.model_validate(agent.spec))
            return Binding(bot_name=bot_name, agent=definition, spec=BindingSpec.model_validate(binding.spec))
        return await self._db.transaction(work)

    async def agents(self) -> dict[str, AgentDefinition]:
        """Every applied agent by name: what a delegating agent's pinned delegates are built from."""
        async def work(session: AsyncSession) -> dict[str, AgentDefinition]:
            rows = (await session.execute(select(AgentRow))).scalars()
            return {row.name: AgentDefinition(name=row.name, version=row.version,
                                              spec=AgentSpec.model_validate(row.spec)) for row in rows}
        return await self._db.transaction(work)

    async def webhook_secret(self, bot_name: str) -> str:
        """The bot's webhook secret, generated once and shared by every replica."""
        async def work(session: AsyncSession) -> str:
            bot = (await session.execute(select(BotRow).where(BotRow.name == bot_name)
                                         .with_for_update())).scalar_one_or_none()
            if bot is None:
                raise UnknownBot(f"no bot {bot_name!r}; run `gateway apply`")
            if not bot.webhook_secret:
                bot.webhook_secret = secrets.token_urlsafe(48)
            return bot.webhook_secret
        return await self._db.transaction(work)


async def _upsert_agent(session: AsyncSession, agent: AgentSpec) -> int:
    spec = agent.model_dump(mode="json")
    row = (await session.execute(select(AgentRow).where(AgentRow.name == agent.name))).scalar_one_or_none()
    if row is None:
        session.add(AgentRow(name=agent.name, spec=spec, version=1))
        await session.flush()
        return 1
    if row.spec != spec:
        row.spec, row.version, row.updated_at = spec, row.version + 1, utcnow()
    return row.version


async def _upsert_bot(session: AsyncSession, bot: BotSpec, dialect: str) -> None:
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    settings = bot.model_dump(mode="json", exclude={"name", "platform", "agent", "binding"})
    statement = insert(BotRow).values(name=bot.name, platform=bot.platform, settings=settings, updated_at=utcnow())
    await session.execute(statement.on_conflict_do_update(
        index_elements=["name"],
        set_={"platform": bot.platform, "settings": settings, "updated_at": utcnow()}))
    binding = {"bot_name": bot.name, "agent_name": bot.agent, "spec": bot.binding.model_dump(mode="json")}
    statement = insert(BindingRow).values(**binding, updated_at=utcnow())
    await session.execute(statement.on_conflict_do_update(
        index_elements=["bot_name"],
        set_={"agent_name": bot.agent, "spec": binding["spec"], "updated_at": utcnow()}))
