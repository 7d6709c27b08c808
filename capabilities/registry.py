"""The capability registry: what an agent may switch on, with its tools, scopes and config schema."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_ai.capabilities import AbstractCapability

from adapters.base import ChatAddress, Directory
from gateway.config.errors import describe_errors

Category = Literal["knowledge", "research", "analysis", "reasoning", "utility", "channels"]
ApprovalMode = Literal["default", "required", "never"]

ALL_SCOPES = frozenset({"knowledge:read", "conversations:read", "web:read", "web:fetch", "web:browse",
                        "code:execute", "sandbox:execute", "agents:delegate"})
"""Every scope the catalog names; all are granted by default."""

_CALLABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


class NoConfig(BaseModel):
    """A capability without settings."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


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
    address: ChatAddress | None = None
    """The room of the message that admitted the run; `None` for a run with no chat behind it."""
    directory: Directory | None = None
    """The bot's own channel lookups on its platform; `None` where there is no directory."""
    state: ConversationState | None = None
    """This conversation's capability state between turns; `None` where there is no conversation."""
    resuming: bool = False
    """True when the run continues one that was parked for an approval."""
    delegates: Delegates | None = None
    """How `subagents` builds this agent's delegates; `None` where nothing can be delegated to."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BuiltDelegate:
    """A delegate agent built for one run: its own capabilities and approval gates, on this run's budget."""

    agent: Any
    """A pydantic-ai `Agent` whose output is `str | DeferredToolRequests`."""
    stable_id: Callable[[str], str]
    """The stable tool id behind a name the delegate's model sees (approval cards name the real call)."""


class Delegates(Protocol):
    """What `subagents` needs from the gateway: delegates built through the same assembly as the agent
    a chat admitted, on the deployment's models, with their approval gates, counted into the run's usage."""

    depth_left: int | None
    """Levels of delegation the tree above leaves this agent; `None` for the agent a chat admitted."""
    parent_model: str
    """The delegating agent's own model (profile name or model string): what an agent file inherits."""
    model_names: frozenset[str]
    """The model profiles this deployment configures: all a model-written specialist may name."""
    ask_user: Callable[[str], Awaitable[str]] | None
    """Puts a synchronous delegate's question to the person holding the run; `None`: nobody to ask."""

    pinned: tuple[str, ...]
    """The other agents of this gateway the delegating agent names in its spec's top-level `subagents`."""
    specialists: dict[str, dict[str, Any]]
    """The specialists the model wrote with `create_agent` in this run, by name (name, description,
    instructions, model, mode): carried across an approval park and registered again on resume."""

    def resolve_model(self, name: str) -> Any:
        """A pydantic-ai model for a profile name or model string, as the agent's own model resolves."""
        ...

    def agent_description(self, name: str) -> str | None:
        """The description of another agent of this gateway, or None when there is no such agent."""
        ...

    def build_agent(self, name: str, *, depth_left: int, share: Sequence[str],
                    extra: Sequence[AbstractCapability[Any]]) -> BuiltDelegate:
        """Another agent of this gateway, from its own spec (its capabilities, its gates) plus `share`."""
        ...

    def build_specialist(self, *, name: str, instructions: str, model: str, model_settings: Any = None,
                         share: Sequence[str], extra: Sequence[AbstractCapability[Any]]) -> BuiltDelegate:
        """A specialist with `instructions` on the model profile or string `model`, plus `share`."""
        ...

    def charge(self, usage: Any) -> None:
        """Adds one delegate model response's usage to the run's accounting."""
        ...


class ConversationState(Protocol):
    """One JSON object per capability, kept with the conversation between its turns."""

    async def load(self, capability: str) -> dict[str, Any] | None: ...

    async def save(self, capability: str, data: dict[str, Any]) -> None: ...


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
    offered: Callable[[Any], Iterable[str]] | None = None
    """The tool ids a given config offers, where that is not all of `tools` (the drift test holds
    every build to it)."""
    binding_only: bool = False
    """Granted per bot binding (`bots[].binding.<id>`) and refused in an agent spec."""

    def tool(self, tool_id: str) -> ToolInfo | None:
        return next((t for t in self.tools if t.id == tool_id), None)

    def offered_tools(self, config: BaseModel) -> frozenset[str]:
        if self.offered is None:
            return frozenset(t.id for t in self.tools)
        return frozenset(self.offered(config))

    def describe(self, *, granted_scopes: frozenset[str]) -> dict[str, Any]:
        """This capability as the API serves it: what a builder UI draws its picker and forms from."""
        return {"id": self.id, "name": self.name, "category": self.category, "description": self.description,
                "tools": [{"id": t.id, "summary": t.summary, "side_effecting": t.side_effecting}
                          for t in self.tools],
                "scopes": sorted(self.scopes), "available": self.scopes <= granted_scopes,
                "key": None if self.key is None else {"description": self.key.description},
                "granted_in": "binding" if self.binding_only else "agent",
                "config_schema": self.config.model_json_schema()}


class Registry:
    def __init__(self, defs: Iterable[CapabilityDef], *, granted_scopes: frozenset[str] = ALL_SCOPES) -> None:
        self._defs: dict[str, CapabilityDef] = {}
        for definition in defs:
            if definition.id in self._defs:
                raise ValueError(f"capability id {definition.id!r} is registered twice")
            self._defs[definition.id] = definition
        owners: dict[str, str] = {}
        for definition in self._defs.values():
            for tool in definition.tools:
                if owners.setdefault(tool.id, definition.id) != definition.id:
                    raise ValueError(f"tool id {tool.id!r} is declared by both {owners[tool.id]!r} and "
                                     f"{definition.id!r}; approval gates key on it, so it must be unique")
        self.granted_scopes = granted_scopes

    def __iter__(self) -> Any:
        return iter(self._defs.values())

    def get(self, capability_id: str) -> CapabilityDef | None:
        return self._defs.get(capability_id)

    def with_extra(self, *defs: CapabilityDef) -> Registry:
        """A registry with more capabilities (a deployment's own, the demo's)."""
        return Registry([*self._defs.values(), *defs], granted_scopes=self.granted_scopes)

    def describe(self) -> list[dict[str, Any]]:
        """The registry as JSON, each capability with its config's JSON Schema."""
        return [definition.describe(granted_scopes=self.granted_scopes) for definition in self]

    def validate_config(self, config: Any) -> list[str]:
        """Every problem with the agents' capabilities and the bindings' grants and approval overrides."""
        problems = [problem for i, agent in enumerate(config.agents)
                    for problem in self.validate_agent(agent, path=f"agents[{i}]")]
        tool_ids = {tool.id for definition in self for tool in definition.tools}
        for i, bot in enumerate(config.bots):
            for tool_id in bot.binding.approvals.tool_approval:
                if tool_id not in tool_ids:
                    problems.append(f"bots[{i}].binding.approvals.tool_approval.{tool_id}: no capability "
                                    f"offers a tool {tool_id!r}")
            for definition in self:
                grant = getattr(bot.binding, definition.id, None) if definition.binding_only else None
                if grant is not None:
                    problems += schema_problems(definition.config, grant, f"bots[{i}].binding.{definition.id}")
        return problems

    def validate_agent(self, agent: Any, *, path: str) -> list[str]:
        """Every problem with one agent spec's `capabilities[]`, each naming its field and the fix."""
        problems: list[str] = []
        first: dict[str, int] = {}
        for j, entry in enumerate(agent.capabilities):
            if entry.id in first:
                problems.append(f"{path}.capabilities[{j}].id: {entry.id!r} is already bound at "
                                f"{path}.capabilities[{first[entry.id]}]; merge the two entries")
                continue
            first[entry.id] = j
            problems += self.validate_entry(entry, path=f"{path}.capabilities[{j}]")
        return problems + self._name_clashes(agent, path)

    def _name_clashes(self, agent: Any, path: str) -> list[str]:
        """Two tools the model would see under one name: one of them could never be called."""
        problems: list[str] = []
        owners: dict[str, str] = {}
        for j, entry in enumerate(agent.capabilities):
            definition = self._defs.get(entry.id)
            if definition is None or not entry.enabled:
                continue
            for tool in definition.tools:
                name = entry.tool_overrides.get(tool.id, {}).get("name", tool.id)
                if name in owners:
                    problems.append(f"{path}.capabilities[{j}].tool_overrides.{tool.id}.name: {name!r} is already "
                                    f"the name of {owners[name]}; give each tool a name of its own")
                owners.setdefault(name, f"{entry.id}.{tool.id}")
        return problems

    def validate_entry(self, entry: Any, *, path: str) -> list[str]:
        """Every problem with one `capabilities[]` entry of an agent spec, each naming its field."""
        definition = self._defs.get(entry.id)
        if definition is None:
            return [f"{path}.id: unknown capability {entry.id!r}; known: {', '.join(sorted(self._defs))}"]
        if definition.binding_only:
            return [f"{path}.id: {entry.id!r} is granted per bot binding, not in an agent spec; remove it here "
                    f"and set bots[].binding.{entry.id} on each bot whose chats may use it"]
        problems = schema_problems(definition.config, entry.config, f"{path}.config")
        problems += _tool_key_problems(definition, entry, path)
        missing = definition.scopes - self.granted_scopes
        if missing:
            problems.append(f"{path}.id: {entry.id!r} needs scope(s) {', '.join(sorted(missing))}, "
                            "which this deployment does not grant")
        if definition.key is not None and not entry.secret_id:
            problems.append(f"{path}.secret_id: {entry.id!r} needs a key ({definition.key.description}); "
                            "name the secret that holds it")
        return problems


def schema_problems(schema: type[BaseModel], config: Mapping[str, Any], path: str) -> list[str]:
    """Each way `config` breaks `schema`, at its field path, with the value and what is allowed."""
    try:
        schema.model_validate(dict(config))
    except ValidationError as exc:
        return [path + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in problem.loc)
                + f": {problem.message}" for problem in describe_errors(exc, schema)]
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
