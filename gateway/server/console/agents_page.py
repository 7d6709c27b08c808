"""Agents: each spec version with what it binds and the bots bound to it; and the builder, whose forms are drawn
from the capability registry as `GET /api/v1/capabilities` serves it, judged by `gateway check`'s rules, shown as
gateway.yaml and applied as a new agent version only where `console.allow_changes` says so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from starlette.datastructures import FormData
from starlette.responses import Response

from capabilities.registry import Registry
from gateway.agents.bindings import BindingStore
from gateway.config.schema import GatewayConfig
from gateway.server.console.audit import ConsoleAudit
from gateway.server.console.builder import Built, build_entry, config_from_form, form_fields
from gateway.server.console.gate import Visit
from gateway.server.console.queries import agent_versions
from gateway.server.console.render import Renderer
from storage.db import Database

Describe = Callable[[], list[dict[str, Any]]]
"""The registry as `GET /api/v1/capabilities` serves it."""


class AgentsPage:
    def __init__(self, *, renderer: Renderer, db: Database, config: GatewayConfig, registry: Registry,
                 describe: Describe, bindings: BindingStore, audit: ConsoleAudit, allow_changes: bool) -> None:
        self._render = renderer
        self._db = db
        self._config = config
        """The config as applied last: at start, then by the builder."""
        self._bound = registry.used_by(config)
        """What this process bound at start: a version binding anything else needs a restart to run."""
        self._registry = registry
        self._describe = describe
        self._bindings = bindings
        self._audit = audit
        self._allow_changes = allow_changes

    async def show(self, visit: Visit) -> Response:
        bots = {agent.name: [bot.name for bot in self._config.bots if bot.agent == agent.name]
                for agent in self._config.agents}
        return self._render.page(visit, "agents.html", versions=await agent_versions(self._db), bots=bots)

    async def builder(self, visit: Visit) -> Response:
        params = visit.request.query_params
        return self._builder_page(visit, agent=params.get("agent", ""), capability=params.get("capability", ""))

    async def build(self, visit: Visit) -> Response:
        """The submitted form as an entry: its problems as `gateway check` words them, its YAML, and on `apply` (where
        allowed) a new version of the agent."""
        form = await visit.request.form()
        agent, capability = _text(form, "agent"), _text(form, "capability")
        described = self._capability(capability)
        if agent not in {spec.name for spec in self._config.agents} or described is None:
            return self._builder_page(visit, agent=agent, capability=capability, status=400)
        fields = form_fields(described["config_schema"])
        settings, unreadable = config_from_form(fields, {key: _text(form, key) for key in form})
        built = build_entry(self._config, self._registry, agent=agent, capability=capability, settings=settings,
                            approval=_text(form, "approval") or "default")
        problems = unreadable + built.problems
        applied = None
        if _text(form, "action") == "apply" and not problems:
            applied = await self._apply(visit, built, agent, capability)
        return self._builder_page(visit, agent=agent, capability=capability, built=built, problems=problems,
                                  values={key: _text(form, key) for key in form}, applied=applied,
                                  status=422 if problems else 200)

    async def _apply(self, visit: Visit, built: Built, agent: str, capability: str) -> str:
        if not self._allow_changes:
            return "Not applied: console.allow_changes is false, so the console only shows the YAML."
        if capability not in self._bound:
            return (f"Not applied: this gateway did not bind {capability!r} at start; add the fragment to gateway.yaml "
                    "and restart.")
        assert built.config is not None  # a build without problems carries its config
        report = await self._bindings.apply(built.config)
        self._config = built.config
        version = report.agents[agent]
        await self._audit.record(visit.operator.name, "applied agent version",
                                 f"{agent} v{version}:\n{yaml.safe_dump(built.entry, sort_keys=False)}")
        return f"Applied: {agent} is now at version {version}. Put the fragment in gateway.yaml too."

    def _capability(self, capability: str) -> dict[str, Any] | None:
        return next((described for described in self._describe() if described["id"] == capability), None)

    def _builder_page(self, visit: Visit, *, agent: str, capability: str, status: int = 200,
                      built: Built | None = None, problems: list[str] | None = None,
                      values: dict[str, str] | None = None, applied: str | None = None) -> Response:
        described = self._capability(capability)
        if values is None and described is not None and agent:
            values = self._current_values(agent, capability)
        return self._render.page(
            visit, "builder.html", status=status, agents=[spec.name for spec in self._config.agents],
            capabilities=self._describe(), agent=agent, capability=described,
            fields=form_fields(described["config_schema"]) if described else [], values=values or {}, built=built,
            problems=problems or [], applied=applied)

    def _current_values(self, agent: str, capability: str) -> dict[str, str]:
        """The form filled from the agent's entry for this capability as gateway.yaml has it."""
        spec = next(spec for spec in self._config.agents if spec.name == agent)
        entry = next((entry for entry in spec.capabilities if entry.id == capability), None)
        if entry is None:
            return {}
        values = {f"config.{key}": _shown(value) for key, value in entry.config.items()}
        return {**values, "approval": entry.approval}


def _text(form: FormData, key: str) -> str:
    value = form.get(key)
    return value if isinstance(value, str) else ""


def _shown(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
        return "\n".join(map(str, value))
    if isinstance(value, dict | list):
        return yaml.safe_dump(value, sort_keys=False).strip()
    return str(value).lower() if isinstance(value, bool) else str(value)
