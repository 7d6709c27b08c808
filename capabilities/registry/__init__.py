"""The capability registry: what an agent may switch on, with its tools, scopes and config schema.

A `CapabilityDef[C]` is generic in its config class `C`: its builder receives a `BuildContext[C]`
(`capabilities/run/`) whose `config` is already a validated `C`, and the run's facts and stores
typed. A capability that ends a run on purpose raises a `RunRefused`; one that keeps something for the
length of a run cleans it up in `on_run_end`. The gateway's core knows no particular capability.

A declaration is read far more often than a capability is built: `gateway check`, the capabilities API and every
start validate configs against all of them, and a run builds only the few its agent binds. So a capability's
builder and hooks may be a `Deferred` reference, `Deferred("capabilities.memory_mem0.build:build")`, imported when
first called: the declaration (`capabilities/<id>/__init__.py`: id, tools, scopes, key, config model) then imports
neither pydantic-ai nor the SDKs its tools use, and `gateway check` starts in a fraction of a second. This module
imports pydantic-ai for type checking only, for the same reason.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from capabilities.registry.config_errors import describe_errors

if TYPE_CHECKING:
    from pydantic_ai.capabilities import AbstractCapability

    from capabilities.run import BuildContext, Deployment, PersonalStore, SecretLookup

Category = Literal["knowledge", "research", "analysis", "reasoning", "utility", "channels"]
ApprovalMode = Literal["default", "required", "never"]

ALL_SCOPES = frozenset({"knowledge:read", "conversations:read", "web:read", "web:fetch", "web:browse",
                        "code:execute", "sandbox:execute", "agents:delegate"})
"""Every scope the catalog names; all are granted by default."""

CALLABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
"""A tool name every model provider accepts: letters, digits, _ and -, up to 64, not starting with a digit."""


class NoConfig(BaseModel):
    """A capability without settings."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


C = TypeVar("C", bound=BaseModel)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInfo:
    id: str
    """The stable id: approval gates and overrides key on it, whatever name the model sees."""
    summary: str
    side_effecting: bool = False
    provider_executed: bool = False
    """Always run by the model provider (a built-in web search, code execution), not by this gateway: no approval
    gate can stop it, so a spec or binding that requires one is refused when it is applied. A tool that runs there
    only under some configs says so through `CapabilityDef.at_provider` instead."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyRequirement(Generic[C]):
    """The capability needs a key: its entry must name a `secret_id`, which the builder gets resolved."""

    description: str
    when: Callable[[C], bool] | None = None
    """Needed only for the configs this returns True for (a provider that has a free tier, say); None: always."""

    def applies_to(self, config: C) -> bool:
        return self.when is None or self.when(config)


class RunRefused(Exception):
    """A capability ends the run on purpose (a guardrail block): an outcome of its own, not a failure.

    The runtime answers the chat with `notice`, logs `edge`, and books the run as `status`.
    """

    status: ClassVar[str] = "refused"
    """The run's final status in its row; a subclass names its own."""

    def __init__(self, message: str, *, notice: str, edge: str) -> None:
        super().__init__(message)
        self.notice = notice
        """What the chat is told, in place of an answer."""
        self.edge = edge
        """Where the run was stopped (the input, the answer, a tool result): for the log."""


Builder = Callable[["BuildContext[C]"], "AbstractCapability[Any] | None"]
RunEndHook = Callable[["BuildContext[C]"], Awaitable[None]]
Binder = Callable[["Deployment"], Any]
"""Builds a capability's services (a frozen dataclass of its own) from the deployment, once, at start."""
PersonalStoreFactory = Callable[["Deployment"], "PersonalStore"]
AskUser = Callable[[str], Awaitable[str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class AskedQuestion:
    """A question a parked call waits on: who asks, what, and the options offered (none: answered in words)."""

    asker: str
    """Who asks, named in the chat ("researcher asks: …"); empty: the agent answering the person."""
    question: str
    choices: tuple[str, ...] = ()
    answered: Callable[[str | None], Any] = field(compare=False)
    """The parked call's metadata with the person's answer (None: nobody answered) put where the asker reads it on
    resume."""


Asked = Callable[[Any], "AskedQuestion | None"]
NOBODY_ANSWERED = ("Nobody answered your question before it expired. Continue with what you have, and say in your "
                   "answer what you had to assume.")
"""What the asker is told of a question that expired unanswered."""
MAX_CHOICES = 25
"""Options one question may offer (Slack's actions block holds 25 buttons); past a platform's own, a numbered list."""
MAX_CHOICE_CHARS = 75
"""Characters of one option (Slack's button text)."""


def offered_choices(given: object) -> list[str]:
    """The options a model offered with a question, as it gave them: short texts, each once, in order; anything else
    in the list (and past `MAX_CHOICES`) is left out."""
    kept: list[str] = []
    for choice in cast(list[object], given) if isinstance(given, list) else []:
        text = " ".join(choice.split())[:MAX_CHOICE_CHARS] if isinstance(choice, str) else ""
        if text and text not in kept:
            kept.append(text)
    return kept[:MAX_CHOICES]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Deferred(Generic[F]):
    """A function named by where it lives, `"package.module:name"`, imported the first time it is called.

    A capability's builder and hooks are deferred so that its declaration imports none of the libraries its tools
    use (see the module docstring); `tests/capabilities/test_capabilities_deferred.py` resolves every reference
    the catalog holds, so a misspelt one fails there rather than at a run's first build."""

    target: str
    _resolved: list[F] = field(default_factory=list[F], init=False, repr=False, compare=False)
    """The imported function once resolved: a one-slot cache, since the dataclass is frozen."""

    def resolve(self) -> F:
        if not self._resolved:
            module, _, name = self.target.partition(":")
            function = getattr(importlib.import_module(module), name)
            if not callable(function):
                raise TypeError(f"{self.target} is not a function")
            self._resolved.append(cast(F, function))  # its type is what `target` names; only a call checks it
        return self._resolved[0]

    def __call__(self, *args: Any) -> Any:
        return self.resolve()(*args)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityDef(Generic[C]):
    """One capability this deployment offers: what it declares, its config class, and how a run builds it."""

    id: str
    name: str
    category: Category
    description: str
    tools: tuple[ToolInfo, ...]
    """Every tool the capability may offer; a tool-less capability says `tools=()`."""
    build: Builder[C] | Deferred[Builder[C]]
    """Returns the pydantic-ai capability for a run, or None when it has nothing to contribute. The context's
    config is an instance of `config`, validated. Usually `Deferred`, so the builder's libraries load with the
    first run that binds the capability."""
    config: type[C] = NoConfig  # pyright: ignore[reportAssignmentType] - a def without config is a CapabilityDef[NoConfig]
    scopes: frozenset[str] = frozenset()
    key: KeyRequirement[C] | None = None
    offered: Callable[[C], Iterable[str]] | None = None
    """The tool ids a given config offers, where that is not all of `tools` (the drift test holds
    every build to it)."""
    at_provider: Callable[[C], Iterable[str]] | None = None
    """The tool ids a given config has the model provider run (`method: native`), beyond the tools declared
    `provider_executed`: an approval required on one of them is refused at check and again at assembly."""
    stores_validated: bool = False
    """An applied entry's config is stored as validated (each value in its one spelling: a hostname in lower case,
    IDNA), not as written."""
    binding_only: bool = False
    """Granted per bot binding (`bots[].binding.<id>`) and refused in an agent spec."""
    on_run_end: RunEndHook[C] | Deferred[RunEndHook[C]] | None = None
    """Called once when a run this capability was built into ends (answered, failed or refused), with the
    context it was built from; not when the run parks, since a parked run goes on. Per-run cleanup lives here."""
    defers_mcp_tools: bool = False
    """Binding this capability loads the agent's MCP tools deferred: hidden until the model finds them through it."""
    bind: Binder | Deferred[Binder] | None = None
    """Builds the capability's services from the deployment when the gateway starts (`Registry.bind`), raising
    `ServiceMissing` for one the deployment cannot give; a builder reads them with `BuildContext.bound`. None: the
    capability needs nothing of the deployment."""
    posts_files: bool = False
    """Its tools may post files into the chat: a run that may build it gets an outbox (`RunFacts.outbox`)."""
    fires_later: bool = False
    """Its tools store posts and runs for a later time: the gateway's scheduler runs where a bound capability
    declares this (or the config has `schedules:`), and nowhere else."""
    lendable: bool = True
    """A delegating agent may lend it to its delegates (`share_with_delegates`). False: never lent, so sharing can
    never widen a delegate beyond its own spec."""
    ask_user: AskUser | Deferred[AskUser] | None = None
    """How the capability's delegates put a question to the run's person: the call parks the run, the chat asks."""
    asked: Asked | Deferred[Asked] | None = None
    """The question when a parked call's metadata waits on one rather than on an approval."""
    personal_store: PersonalStoreFactory | Deferred[PersonalStoreFactory] | None = None
    """What the capability keeps about people beyond a run, built from the deployment at start: `forget` deletes it,
    linking two accounts moves it (`Registry.personal_stores`). None: it keeps nothing about anyone."""

    @property
    def asks_in_chat(self) -> bool:
        """A run may park on a question this capability puts to the person in the chat, answered by their next
        message there: only where an agent binds such a capability does each message look for an open question."""
        return self.asked is not None

    def tool(self, tool_id: str) -> ToolInfo | None:
        return next((t for t in self.tools if t.id == tool_id), None)

    def offered_tools(self, config: C) -> frozenset[str]:
        if self.offered is None:
            return frozenset(t.id for t in self.tools)
        return frozenset(self.offered(config))

    def provider_tools(self, config: C | None) -> frozenset[str]:
        """The tools the model provider runs under `config`; only the always-provider ones for None (a config
        that does not validate, whose own problems are reported)."""
        always = {t.id for t in self.tools if t.provider_executed}
        if config is None or self.at_provider is None:
            return frozenset(always)
        return frozenset(always | set(self.at_provider(config)))

    def describe(self, *, granted_scopes: frozenset[str]) -> dict[str, Any]:
        """This capability as the API serves it: what a builder UI draws its picker and forms from."""
        return {"id": self.id, "name": self.name, "category": self.category, "description": self.description,
                "tools": [{"id": t.id, "summary": t.summary, "side_effecting": t.side_effecting}
                          for t in self.tools],
                "scopes": sorted(self.scopes), "available": self.scopes <= granted_scopes,
                "key": None if self.key is None else {"description": self.key.description,
                                                      "conditional": self.key.when is not None},
                "granted_in": "binding" if self.binding_only else "agent",
                "config_schema": self.config.model_json_schema()}


class Registry:
    def __init__(self, defs: Iterable[CapabilityDef[Any]], *, granted_scopes: frozenset[str] = ALL_SCOPES) -> None:
        self._defs: dict[str, CapabilityDef[Any]] = {}
        for definition in defs:
            if definition.id in self._defs:
                raise ValueError(f"capability id {definition.id!r} is registered twice")
            self._defs[definition.id] = definition
        owners: dict[str, str] = {}
        for definition in self._defs.values():
            for tool in definition.tools:
                if tool.provider_executed and tool.side_effecting:
                    raise ValueError(f"tool {tool.id!r} of {definition.id!r} runs at the model provider, so it "
                                     "cannot be gated by default as a side-effecting tool is; declare it as one "
                                     "or the other")
                if owners.setdefault(tool.id, definition.id) != definition.id:
                    raise ValueError(f"tool id {tool.id!r} is declared by both {owners[tool.id]!r} and "
                                     f"{definition.id!r}; approval gates key on it, so it must be unique")
        self.granted_scopes = granted_scopes

    def __iter__(self) -> Iterator[CapabilityDef[Any]]:
        return iter(self._defs.values())

    def get(self, capability_id: str) -> CapabilityDef[Any] | None:
        return self._defs.get(capability_id)

    def bind(self, deployment: Deployment, ids: Iterable[str]) -> BoundRegistry:
        """The registry with the services of the capabilities `ids` names built from `deployment`: what the gateway
        does once at start for every capability an enabled entry binds. A service one of them cannot have raises
        `ServiceMissing` here, so the start fails naming it, never a turn."""
        services: dict[str, Any] = {}
        for capability_id in sorted(set(ids)):
            definition = self._defs.get(capability_id)
            if definition is not None and definition.bind is not None:
                services[capability_id] = definition.bind(deployment)
        return BoundRegistry(self, services, bound=frozenset(ids), secrets=deployment.secrets)

    def personal_stores(self, deployment: Deployment) -> list[PersonalStore]:
        """What every capability of the registry keeps about people, bound by an agent or not: notes written while
        an agent bound one stay after an operator unbinds it, and forgetting a person must still delete them."""
        return [definition.personal_store(deployment) for definition in self if definition.personal_store is not None]

    def used_by(self, config: Any) -> set[str]:
        """The capabilities `config` (a `GatewayConfig`) uses: every enabled entry of an agent, every grant of a bot's
        binding. What the gateway binds at start."""
        ids = {entry.id for agent in config.agents for entry in agent.capabilities if entry.enabled}
        return ids | {definition.id for definition in self if definition.binding_only
                      and any(getattr(bot.binding, definition.id, None) is not None for bot in config.bots)}

    def posts_files(self, ids: Iterable[str]) -> bool:
        """Whether any of these capabilities may post a file into the chat."""
        return any((definition := self._defs.get(capability_id)) is not None and definition.posts_files
                   for capability_id in ids)

    def with_extra(self, *defs: CapabilityDef[Any]) -> Registry:
        """A registry with more capabilities (a deployment's own, the demo's)."""
        return Registry([*self._defs.values(), *defs], granted_scopes=self.granted_scopes)

    def describe(self) -> list[dict[str, Any]]:
        """The registry as JSON, each capability with its config's JSON Schema."""
        return [definition.describe(granted_scopes=self.granted_scopes) for definition in self]

    def stored(self, config: Any) -> Any:
        """`config` (a `GatewayConfig`) as it is applied: the entries of capabilities that `stores_validated` carry
        their config as validated. An entry whose config does not validate is left as written (it is refused)."""
        agents = [agent.model_copy(update={"capabilities": [self._stored_entry(e) for e in agent.capabilities]})
                  for agent in config.agents]
        return config.model_copy(update={"agents": agents})

    def _stored_entry(self, entry: Any) -> Any:
        definition = self._defs.get(entry.id)
        valid = valid_config(definition, entry.config) if definition and definition.stores_validated else None
        if valid is None:
            return entry
        return entry.model_copy(update={"config": valid.model_dump(mode="json", exclude_unset=True)})

    def validate_config(self, config: Any) -> list[str]:
        """Every problem with the agents' capabilities and the bindings' grants and approval overrides."""
        problems = [problem for i, agent in enumerate(config.agents)
                    for problem in self.validate_agent(agent, path=f"agents[{i}]")]
        tool_ids = {tool.id for definition in self for tool in definition.tools}
        agents = {agent.name: agent for agent in config.agents}
        always = {tool.id for definition in self for tool in definition.tools if tool.provider_executed}
        mcp_prefixes = tuple(f"{server.name}_" for server in getattr(config, "mcp_servers", ()))
        for i, bot in enumerate(config.bots):
            provider = always | self._provider_tools_of(agents.get(bot.agent))
            for tool_id, mode in bot.binding.approvals.tool_approval.items():
                where = f"bots[{i}].binding.approvals.tool_approval.{tool_id}"
                if tool_id not in tool_ids and not (mcp_prefixes and tool_id.startswith(mcp_prefixes)):
                    problems.append(f"{where}: no capability offers a tool {tool_id!r}")
                elif tool_id in provider and mode == "required":
                    problems.append(_ungatable(where, tool_id, tool_id not in always))
            for definition in self:
                grant = getattr(bot.binding, definition.id, None) if definition.binding_only else None
                if grant is not None:
                    problems += schema_problems(definition.config, grant, f"bots[{i}].binding.{definition.id}")
        return problems

    def _provider_tools_of(self, agent: Any) -> set[str]:
        """The tools the model provider runs under the configs of `agent`'s entries (none for an unknown agent)."""
        provider: set[str] = set()
        for entry in agent.capabilities if agent is not None else ():
            definition = self._defs.get(entry.id)
            if definition is not None and entry.enabled:
                provider |= definition.provider_tools(valid_config(definition, entry.config))
        return provider

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
        config_problems = schema_problems(definition.config, entry.config, f"{path}.config")
        problems = config_problems + _tool_key_problems(definition, entry, path)
        missing = definition.scopes - self.granted_scopes
        if missing:
            problems.append(f"{path}.id: {entry.id!r} needs scope(s) {', '.join(sorted(missing))}, "
                            "which this deployment does not grant")
        key = definition.key
        config = None if config_problems else config_for(definition, entry.config)
        if key is not None and not entry.secret_id and (key.when is None or (
                config is not None and key.applies_to(config))):
            problems.append(f"{path}.secret_id: {entry.id!r} needs a key ({key.description}); "
                            "name the secret that holds it")
        return problems + provider_gate_problems(definition, entry, path, config=config)


def schema_problems(schema: type[BaseModel], config: Mapping[str, Any], path: str) -> list[str]:
    """Each way `config` breaks `schema`, at its field path, with the value and what is allowed."""
    try:
        schema.model_validate(dict(config))
    except ValidationError as exc:
        return [path + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in problem.loc)
                + f": {problem.message}" for problem in describe_errors(exc, schema)]
    return []


def _tool_key_problems(definition: CapabilityDef[Any], entry: Any, path: str) -> list[str]:
    problems: list[str] = []
    known = ", ".join(t.id for t in definition.tools) or "none"
    for tool_id in entry.tool_approval:
        if definition.tool(tool_id) is None:
            problems.append(f"{path}.tool_approval.{tool_id}: {entry.id!r} has no tool {tool_id!r} (tools: {known})")
    for tool_id, override in entry.tool_overrides.items():
        if definition.tool(tool_id) is None:
            problems.append(f"{path}.tool_overrides.{tool_id}: {entry.id!r} has no tool {tool_id!r} "
                            f"(tools: {known})")
        problems += override_problems(override, f"{path}.tool_overrides.{tool_id}")
    return problems


def override_problems(override: Mapping[str, Any], where: str) -> list[str]:
    """What one `tool_overrides` entry at `where` gets wrong, a capability's or an MCP server's tool alike: a
    name no model could call, or a field other than name and description."""
    problems: list[str] = []
    name = override.get("name")
    if name is not None and not CALLABLE_NAME.match(name):
        problems.append(f"{where}.name: {name!r} is not a name a model can call "
                        "(letters, digits, _ and -, up to 64, not starting with a digit)")
    unknown = set(override) - {"name", "description"}
    if unknown:
        problems.append(f"{where}: only name and description can be overridden, not {', '.join(sorted(unknown))}")
    return problems


def provider_gate_problems(definition: CapabilityDef[Any], entry: Any, path: str, *, config: Any,
                           binding_modes: Mapping[str, str] | None = None) -> list[str]:
    """A tool the model provider runs cannot wait for a person, so requiring an approval for it is refused: at
    check, and again at assembly (with the bot binding's modes), since nothing re-validates a stored version."""
    problems: list[str] = []
    provider = definition.provider_tools(config)
    for tool in definition.tools:
        if tool.id not in provider:
            continue
        by_config = not tool.provider_executed
        if binding_modes is not None and binding_modes.get(tool.id) == "required":
            problems.append(_ungatable(f"bots[].binding.approvals.tool_approval.{tool.id}", tool.id, by_config))
        if entry.tool_approval.get(tool.id) == "required":
            problems.append(_ungatable(f"{path}.tool_approval.{tool.id}", tool.id, by_config))
        elif entry.approval == "required" and tool.id not in entry.tool_approval:
            problems.append(_ungatable(f"{path}.approval", tool.id, by_config))
    return problems


def _ungatable(where: str, tool_id: str, by_config: bool = False) -> str:
    if by_config:
        return (f"{where}: with this config, {tool_id!r} runs at the model provider, where no approval can stop "
                "it; choose a config under which this deployment runs it itself, or drop the approval requirement")
    return (f"{where}: {tool_id!r} runs at the model provider, where no approval can stop it; remove the "
            "requirement, or leave the tool out")


def config_for(definition: CapabilityDef[C], config: Mapping[str, Any]) -> C:
    return definition.config.model_validate(dict(config))


def valid_config(definition: CapabilityDef[C], config: Mapping[str, Any]) -> C | None:
    """The entry's config, or None when it does not validate (its problems are reported on their own)."""
    try:
        return config_for(definition, config)
    except ValidationError:
        return None


class BoundRegistry:
    """The registry bound to one deployment (`Registry.bind`): each capability's services, and the secrets its
    entries' `secret_id`s resolve from. What a run builds its capabilities with."""

    def __init__(self, registry: Registry, services: Mapping[str, Any], *, bound: frozenset[str] = frozenset(),
                 secrets: SecretLookup | None) -> None:
        """`bound`: the capabilities this deployment's agents and bindings use (`Registry.used_by`)."""
        self.registry = registry
        self._services = dict(services)
        used = [definition for capability_id in bound if (definition := registry.get(capability_id)) is not None]
        self.asks_in_chat = any(definition.asks_in_chat for definition in used)
        """Whether a capability this deployment binds may put a question to the chat and wait for its answer."""
        self.fires_later = any(definition.fires_later for definition in used)
        """Whether a capability this deployment binds stores posts and runs for later (`CapabilityDef.fires_later`)."""
        self.secrets = secrets
        self.binding_only = tuple(definition.id for definition in registry if definition.binding_only)
        """The capabilities granted per bot binding rather than in an agent spec."""
        self.asking: AskUser | None = next((cast(AskUser, d.ask_user) for d in registry if d.ask_user is not None),
                                           None)
        """How a delegate's question reaches the run's person, from the capability that offers it; None: nobody
        offers one."""

    def services(self, capability_id: str) -> Any:
        """What the capability's `bind` built; None when it binds nothing (or was not bound)."""
        return self._services.get(capability_id)

    def asked(self, metadata: Any) -> AskedQuestion | None:
        """The question when a parked call waits on one to the person; None for an approval."""
        for definition in self.registry:
            if definition.asked is not None and (found := definition.asked(metadata)) is not None:
                return found
        return None
