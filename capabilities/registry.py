"""The capability registry: what an agent may switch on, with its tools, scopes and config schema."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_ai.capabilities import AbstractCapability

Category = Literal["knowledge", "research", "analysis", "reasoning", "utility", "channels"]
ApprovalMode = Literal["default", "required", "never"]

ALL_SCOPES = frozenset({"knowledge:read", "conversations:read", "web:read", "web:fetch", "web:browse",
                        "code:execute", "sandbox:execute", "agents:delegate"})
"""Every scope the catalog names; all are granted by default."""

_CALLABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


class NoConfig(BaseModel):
    """A capability without settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInfo:
    id: str
    """The stable id: approval gates and overrides key on it, whatever name the model sees."""
    summary: str
    side_effecting: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyRequirement:
    description: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildContext:
    """What a builder receives for one run: its validated config and the turn's server-side facts."""

    config: BaseModel
    is_direct: bool
    stores: Mapping[str, Any] = field(default_factory=dict)
    """Database-backed stores by name (memory, plans, …), never a raw session."""


Builder = Callable[[BuildContext], AbstractCapability[Any] | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityDef:
    id: str
    name: str
    category: Category
    description: str
    tools: tuple[ToolInfo, ...]
    """Every tool the capability may offer; a tool-less capability says `tools=()`."""
    build: Builder
    """Returns the pydantic-ai capability for a run, or None when it has nothing to contribute."""
    config: type[BaseModel] = NoConfig
    scopes: frozenset[str] = frozenset()
    key: KeyRequirement | None = None

    def tool(self, tool_id: str) -> ToolInfo | None:
        return next((t for t in self.tools if t.id == tool_id), None)


class Registry:
    def __init__(self, defs: Iterable[CapabilityDef], *, granted_scopes: frozenset[str] = ALL_SCOPES) -> None:
        self._defs: dict[str, CapabilityDef] = {}
        for definition in defs:
            if definition.id in self._defs:
                raise ValueError(f"capability id {definition.id!r} is registered twice")
            self._defs[definition.id] = definition
        self.granted_scopes = granted_scopes

    def __iter__(self) -> Any:
        return iter(self._defs.values())

    def get(self, capability_id: str) -> CapabilityDef | None:
        return self._defs.get(capability_id)

    def with_extra(self, *defs: CapabilityDef) -> Registry:
        """A registry with more capabilities (a deployment's own, the demo's)."""
        return Registry([*self._defs.values(), *defs], granted_scopes=self.granted_scopes)

    def validate_config(self, config: Any) -> list[str]:
        """Every problem with the agents' capabilities and the bindings' approval overrides."""
        problems = [problem for i, agent in enumerate(config.agents)
                    for j, entry in enumerate(agent.capabilities)
                    for problem in self.validate_entry(entry, path=f"agents[{i}].capabilities[{j}]")]
        tool_ids = {tool.id for definition in self for tool in definition.tools}
        for i, bot in enumerate(config.bots):
            for tool_id in bot.binding.approvals.tool_approval:
                if tool_id not in tool_ids:
                    problems.append(f"bots[{i}].binding.approvals.tool_approval.{tool_id}: no capability "
                                    f"offers a tool {tool_id!r}")
        return problems

    def validate_entry(self, entry: Any, *, path: str) -> list[str]:
        """Every problem with one `capabilities[]` entry of an agent spec, each naming its field."""
        definition = self._defs.get(entry.id)
        if definition is None:
            return [f"{path}.id: unknown capability {entry.id!r}; known: {', '.join(sorted(self._defs))}"]
        problems = _config_problems(definition, entry.config, path)
        problems += _tool_key_problems(definition, entry, path)
        missing = definition.scopes - self.granted_scopes
        if missing:
            problems.append(f"{path}.id: {entry.id!r} needs scope(s) {', '.join(sorted(missing))}, "
                            "which this deployment does not grant")
        if definition.key is not None and not entry.secret_id:
            problems.append(f"{path}.secret_id: {entry.id!r} needs a key ({definition.key.description}); "
                            "name the secret that holds it")
        return problems


def _config_problems(definition: CapabilityDef, config: Mapping[str, Any], path: str) -> list[str]:
    try:
        definition.config.model_validate(dict(config))
    except ValidationError as exc:
        return [f"{path}.config.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
    return []


def _tool_key_problems(definition: CapabilityDef, entry: Any, path: str) -> list[str]:
    problems = []
    known = ", ".join(t.id for t in definition.tools) or "none"
    for tool_id in entry.tool_approval:
        if definition.tool(tool_id) is None:
            problems.append(f"{path}.tool_approval.{tool_id}: {entry.id!r} has no tool {tool_id!r} (tools: {known})")
    for tool_id, override in entry.tool_overrides.items():
        if definition.tool(tool_id) is None:
            problems.append(f"{path}.tool_overrides.{tool_id}: {entry.id!r} has no tool {tool_id!r} "
                            f"(tools: {known})")
        name = override.get("name")
        if name is not None and not _CALLABLE_NAME.match(name):
            problems.append(f"{path}.tool_overrides.{tool_id}.name: {name!r} is not a name a model can call "
                            "(letters, digits, _ and -, up to 64, not starting with a digit)")
        unknown = set(override) - {"name", "description"}
        if unknown:
            problems.append(f"{path}.tool_overrides.{tool_id}: only name and description can be overridden, "
                            f"not {', '.join(sorted(unknown))}")
    return problems


def config_for(definition: CapabilityDef, config: Mapping[str, Any]) -> BaseModel:
    return definition.config.model_validate(dict(config))
