"""The binding table: which agent answers for each bot, with what instructions, access and limits."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update

from adapters.base import Speaker
from gateway.config.schema import AgentSpec, BindingSpec, BotSpec, GatewayConfig
from storage.db import Database, insert_for
from storage.tables import AGENT_VERSIONS as VERSIONS
from storage.tables import AGENTS, BINDINGS, BOTS, utcnow

UPSERT_CHUNK = 500
"""Bots per statement: 4 bound values a row stays well under SQLite's 32,766 variables."""


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
    pins: Mapping[str, int] = field(default_factory=dict)
    """Each delegate in `spec.subagents` → the version it is built from, fixed when this version was applied."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Binding:
    bot_name: str
    agent: AgentDefinition
    spec: BindingSpec
    delegate_versions: Mapping[tuple[str, int], AgentDefinition] = field(default_factory=dict)
    """Every agent version the agent's pins reach, and theirs in turn, by (name, version): what its delegates
    are built from. Versions are never rewritten, so a parked run that carries these resumes on the same specs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApplyReport:
    agents: dict[str, int]
    """Agent name → version after applying (a changed spec gets a new version)."""
    bots: list[str]


class BindingStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._specs: dict[tuple[str, int], AgentSpec] = {}
        """Validated agent specs by (name, version): a version is never rewritten, so it is read once."""
        self._binding_specs: dict[str, tuple[Any, BindingSpec]] = {}
        """Each bot's validated binding spec, with the stored JSON it was validated from."""

    async def apply(self, config: GatewayConfig) -> ApplyReport:
        """Upsert agents, bots and bindings from a validated config, in one transaction.

        Every new version of an agent is also written to `agent_versions`, with its delegates pinned to their
        versions as of this apply. Pins belong to the version: an agent whose own spec did not change keeps the
        pins it was published with, even when a delegate it names got a new version in this same apply. So a
        run's recorded agent version says exactly which delegate versions it called, and a delegate's author
        re-publishing never changes what an already-published caller runs; the caller's author moves to the new
        delegate by applying a changed spec of their own (which re-pins every delegate it names).
        """
        def work(connection: Connection) -> ApplyReport:
            versions = {agent.name: _upsert_agent(connection, agent) for agent in config.agents}
            for agent in config.agents:
                _record_version(connection, agent, versions[agent.name])
            _upsert_bots(connection, config.bots)
            return ApplyReport(agents=versions, bots=[b.name for b in config.bots])
        return await self._db.run(work)

    async def load(self, bot_name: str) -> Binding:
        return await self._db.run(lambda connection: self.read(connection, bot_name))

    def read(self, connection: Connection, bot_name: str) -> Binding:
        """`load` in the caller's transaction: one SELECT (binding, agent and its version's pins joined), and one
        more per level of delegates; specs are validated once per agent version and binding."""
        row = connection.execute(_BINDING, {"bot_name": bot_name}).first()
        if row is None:
            raise UnknownBot(f"no binding for bot {bot_name!r}; run `gateway apply`")
        binding_spec, name, version, agent_spec, pins = row
        definition = AgentDefinition(name=name, version=version, spec=self._agent_spec(name, version, agent_spec),
                                     pins=pins or {})
        return Binding(bot_name=bot_name, agent=definition, spec=self._binding_spec(bot_name, binding_spec),
                       delegate_versions=_reachable(connection, definition.pins) if definition.pins else {})

    def _agent_spec(self, name: str, version: int, stored: Any) -> AgentSpec:
        key = (name, version)
        if key not in self._specs:
            self._specs[key] = AgentSpec.model_validate(stored)
        return self._specs[key]

    def _binding_spec(self, bot_name: str, stored: Any) -> BindingSpec:
        cached = self._binding_specs.get(bot_name)
        if cached is None or cached[0] != stored:
            cached = self._binding_specs[bot_name] = (stored, BindingSpec.model_validate(stored))
        return cached[1]

    async def webhook_secret(self, bot_name: str) -> str:
        """The bot's webhook secret, generated once and shared by every replica."""
        def work(connection: Connection) -> str:
            bot = connection.execute(select(BOTS.c.webhook_secret).where(BOTS.c.name == bot_name)
                                     .with_for_update()).one_or_none()
            if bot is None:
                raise UnknownBot(f"no bot {bot_name!r}; run `gateway apply`")
            if bot.webhook_secret:
                return bot.webhook_secret
            secret = secrets.token_urlsafe(48)
            connection.execute(update(BOTS).where(BOTS.c.name == bot_name).values(webhook_secret=secret))
            return secret
        return await self._db.run(work)


_BINDING = (select(BINDINGS.c.spec, AGENTS.c.name, AGENTS.c.version, AGENTS.c.spec, VERSIONS.c.pins)
            .join(AGENTS, AGENTS.c.name == BINDINGS.c.agent_name)
            .outerjoin(VERSIONS, (VERSIONS.c.agent_name == AGENTS.c.name) & (VERSIONS.c.version == AGENTS.c.version))
            .where(BINDINGS.c.bot_name == bindparam("bot_name")))


def _reachable(connection: Connection, pins: Mapping[str, int]) -> dict[tuple[str, int], AgentDefinition]:
    """The pinned versions, and the versions they pin in turn, by (name, version)."""
    found: dict[tuple[str, int], AgentDefinition] = {}
    asked: set[tuple[str, int]] = set()
    wanted = set(pins.items())
    while wanted:
        asked |= wanted
        rows = connection.execute(select(VERSIONS).where(
            VERSIONS.c.agent_name.in_({name for name, _ in wanted}),
            VERSIONS.c.version.in_({version for _, version in wanted})))
        for row in rows:
            if (row.agent_name, row.version) in wanted:
                found[(row.agent_name, row.version)] = AgentDefinition(
                    name=row.agent_name, version=row.version, spec=AgentSpec.model_validate(row.spec), pins=row.pins)
        wanted = {pin for definition in found.values() for pin in definition.pins.items()} - asked
    return found


def _upsert_agent(connection: Connection, agent: AgentSpec) -> int:
    """Store the agent's spec; a changed spec is its next version. Returns the version it has now."""
    spec = agent.model_dump(mode="json")
    row = connection.execute(select(AGENTS.c.version, AGENTS.c.spec).where(AGENTS.c.name == agent.name)).first()
    if row is None:
        connection.execute(insert(AGENTS).values(name=agent.name, spec=spec, version=1))
        return 1
    if row.spec == spec:
        return row.version
    connection.execute(update(AGENTS).where(AGENTS.c.name == agent.name)
                       .values(spec=spec, version=row.version + 1, updated_at=utcnow()))
    return row.version + 1


def _record_version(connection: Connection, agent: AgentSpec, version: int) -> None:
    """Write the agent's current version to the history once, pinning its delegates as they stand now."""
    exists = connection.execute(select(VERSIONS.c.id).where(
        VERSIONS.c.agent_name == agent.name, VERSIONS.c.version == version)).scalar()
    if exists is not None:
        return
    current = {name: number for name, number in connection.execute(
        select(AGENTS.c.name, AGENTS.c.version).where(AGENTS.c.name.in_(agent.subagents)))}
    pins = {name: current[name] for name in agent.subagents if name in current}
    connection.execute(insert(VERSIONS).values(agent_name=agent.name, version=version,
                                               spec=agent.model_dump(mode="json"), pins=pins))


def _upsert_bots(connection: Connection, bots: Sequence[BotSpec]) -> None:
    """Every bot and its binding in two statements per `UPSERT_CHUNK` bots, however many bots there are."""
    insert_or_update = insert_for(connection.dialect.name)
    now = utcnow()
    for start in range(0, len(bots), UPSERT_CHUNK):
        chunk = bots[start:start + UPSERT_CHUNK]
        rows = insert_or_update(BOTS).values([
            {"name": bot.name, "platform": bot.platform, "updated_at": now,
             "settings": bot.model_dump(mode="json", exclude={"name", "platform", "agent", "binding"})}
            for bot in chunk])
        connection.execute(rows.on_conflict_do_update(
            index_elements=["name"],
            set_={"platform": rows.excluded.platform, "settings": rows.excluded.settings, "updated_at": now}))
        bindings = insert_or_update(BINDINGS).values([
            {"bot_name": bot.name, "agent_name": bot.agent, "spec": bot.binding.model_dump(mode="json"),
             "updated_at": now} for bot in chunk])
        connection.execute(bindings.on_conflict_do_update(
            index_elements=["bot_name"],
            set_={"agent_name": bindings.excluded.agent_name, "spec": bindings.excluded.spec, "updated_at": now}))
