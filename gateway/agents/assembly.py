"""Assembles the pydantic-ai agent for one run from the agent spec, the binding and the registry.

A run's delegates are built through the same assembly (`GatewayDelegates`). A delegate runs on its own
spec — its model, its capabilities, its approval gates (the bot binding's per-tool modes still apply: it
answers in that bot's chats) — plus whatever the delegating agent's `share_with_delegates` lends it, one
capability id at a time. `subagents` is never lent: whether a delegate may delegate is its own spec's
decision, bounded by the levels the tree above has left. Delegates keep no conversation state (a
delegate's plan lasts its own run) and every model response they get is added to the run's usage.

A delegate named in `subagents` is built from the version its caller pinned when the caller was applied
(`BindingStore.apply`), not from its latest spec, and its own delegates from the versions *that* version
pinned: each author's decisions hold when somebody else calls them. The binding carries every version the
pins reach (`Binding.delegate_versions`), and a parked run's snapshot carries them on to its resume.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from pydantic import SecretStr
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.capabilities import AbstractCapability, Instrumentation
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage, RunUsage

from capabilities.registry import BoundRegistry, CapabilityDef, Registry, config_for, provider_gate_problems
from capabilities.run import BuildContext, BuiltDelegate, Delegates, DelegationFacts, RunFacts, SpecResources
from gateway.agents.bindings import AgentDefinition, Binding
from gateway.agents.channel_context import binding_instructions
from gateway.agents.mcp_servers import NO_SERVERS, ConnectedServers
from gateway.agents.models import ModelResolver
from gateway.agents.tool_policy import ToolPolicy
from gateway.config.schema import AgentSpec, CapabilityEntry, ConfigError, secret_name

Output = str | DeferredToolRequests


class MissingSecret(ConfigError, LookupError):
    """A capability entry names a secret this deployment does not hold: the chat is told it is a configuration
    problem, the log names the variable (never a value)."""

    def __init__(self, capability: str, secret_id: str) -> None:
        super().__init__(f"capability {capability!r} names the secret {secret_id!r}, which is neither in the "
                         "environment nor in the secrets file; set it, or change the entry's secret_id")


class UngatableTool(ConfigError):
    """A stored spec asks for an approval on a tool the model provider runs: the agent stops running until it is
    edited, rather than running the tool with no gate (`gateway check` refuses such a config when it is applied)."""


@dataclass
class RunEnd:
    """The `on_run_end` hooks of the capabilities built into one run, its delegates' included: one per
    capability id, since every level of the tree shares the run's stores."""

    hooks: dict[str, Callable[[], Awaitable[None]]] = field(default_factory=dict)

    def add(self, capability: str, hook: Callable[[], Awaitable[None]]) -> None:
        self.hooks.setdefault(capability, hook)

    async def __call__(self) -> None:
        for hook in self.hooks.values():
            await hook()


@dataclass(frozen=True, slots=True, kw_only=True)
class AssembledAgent:
    agent: Agent[Any, Output]
    policy: ToolPolicy
    delegated: RunUsage = field(default_factory=RunUsage)
    """What this run's delegates spent: added to the run's own usage in its row."""
    specialists: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The specialists the model wrote in this run (`create_agent`), by name: what a park carries."""
    end_run: RunEnd = field(default_factory=RunEnd)
    """Await when the run ends (answered, failed, refused), never when it parks: each capability's cleanup."""


def assemble(binding: Binding, *, capabilities: BoundRegistry, models: ModelResolver, run: RunFacts,
             specialists: Sequence[Mapping[str, Any]] = (), instrumentation: InstrumentationSettings | None = None,
             mcp: ConnectedServers = NO_SERVERS) -> AssembledAgent:
    """The agent for one run, its capabilities built with the services they bound at start. `specialists` are the
    model-written ones a parked run carried, registered again when it continues. `instrumentation` gives the run and
    each of its delegates pydantic-ai's OpenTelemetry spans. `mcp` are the MCP servers this run reached: their tools
    join the agent's, deferred when a bound capability finds them. A synchronous delegate's question reaches the
    run's person the way the capability offering it says (`CapabilityDef.ask_user`)."""
    spec = binding.agent.spec
    registry = capabilities.registry
    binding_text = binding.spec.instructions and binding_instructions(binding.spec.instructions, run.directory,
                                                                        run.address.channel_id)
    instructions = [text for text in (spec.instructions, binding_text) if not isinstance(text, str) or text.strip()]
    modes = binding.spec.approvals.tool_approval
    delegated, end_run = RunUsage(), RunEnd()
    run = replace(run, charge=partial(charge_to, delegated), resources=resources_of(spec))
    traced = () if instrumentation is None else (Instrumentation(settings=instrumentation),)
    kept = {str(specialist["name"]): dict(specialist) for specialist in specialists if "name" in specialist}
    builder = CapabilityBuilder(capabilities=capabilities, binding_modes=modes, end_run=end_run)
    delegates = GatewayDelegates(parent=spec, pins=binding.agent.pins, versions=binding.delegate_versions,
                                 builder=builder, models=models, run=run, usage=delegated,
                                 ask_user=capabilities.asking, traced=traced).delegation(depth_left=None,
                                                                                         specialists=kept)
    built, policy = builder.build([*spec.capabilities, *_binding_grants(binding, capabilities)],
                                  replace(run, delegates=delegates))
    if mcp.servers:
        policy = mcp.governed(policy, modes)
    toolsets = mcp.toolsets(deferred=_defers_mcp_tools(spec, registry)) if mcp.servers else None
    governs = policy.gated or policy.names or policy.descriptions or policy.gated_when is not None
    agent: Agent[Any, Output] = Agent(models.resolve(spec.model), output_type=[str, DeferredToolRequests],
                                      instructions=instructions or None, name=spec.name, toolsets=toolsets,
                                      capabilities=[*traced, *built, *((policy,) if governs else ())])
    return AssembledAgent(agent=agent, policy=policy, delegated=delegated, specialists=kept, end_run=end_run)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityBuilder:
    """Builds capability entries into one run, for the agent a chat admitted and for each of its delegates."""

    capabilities: BoundRegistry = field(repr=False)
    """Never in a repr: its secrets print the values they hold."""
    binding_modes: Mapping[str, str]
    """The bot binding's per-tool approval modes, which hold for every agent answering in its chats."""
    end_run: RunEnd

    def build(self, entries: Sequence[CapabilityEntry],
              run: RunFacts) -> tuple[list[AbstractCapability[Any]], ToolPolicy]:
        """Each enabled entry's capability for this run, and the policy gating and renaming their tools."""
        built: list[AbstractCapability[Any]] = []
        gated: set[str] = set()
        names: dict[str, str] = {}
        descriptions: dict[str, str] = {}
        for entry in entries:
            definition = self.capabilities.registry.get(entry.id)
            if not entry.enabled or definition is None:
                continue
            config = config_for(definition, entry.config)
            refused = provider_gate_problems(definition, entry, f"capabilities[{entry.id}]", config=config,
                                             binding_modes=self.binding_modes)
            if refused:
                raise UngatableTool("; ".join(refused))
            context = BuildContext(capability=entry.id, config=config, run=run, secret=self._secret(entry),
                                   services=self.capabilities.services(entry.id))
            capability = definition.build(context)
            if capability is None:
                continue
            built.append(capability)
            if definition.on_run_end is not None:
                self.end_run.add(definition.id, partial(definition.on_run_end, context))
            gated |= _gated_tools(definition, entry, self.binding_modes, definition.provider_tools(config))
            for tool_id, override in entry.tool_overrides.items():
                if "name" in override:
                    names[tool_id] = override["name"]
                if "description" in override:
                    descriptions[tool_id] = override["description"]
        return built, ToolPolicy(gated=frozenset(gated), names=names, descriptions=descriptions)

    def _secret(self, entry: CapabilityEntry) -> SecretStr | None:
        if entry.secret_id is None:
            return None
        secrets = self.capabilities.secrets
        value = secrets.get(secret_name(entry.secret_id)) if secrets is not None else None
        if value is None:
            raise MissingSecret(entry.id, entry.secret_id)
        return SecretStr(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayDelegates:
    """`capabilities.run.DelegateBuilder` for one delegating agent of one run."""

    parent: AgentSpec
    pins: Mapping[str, int] = field(default_factory=dict)
    """The delegating agent's pins (name → version)."""
    versions: Mapping[tuple[str, int], AgentDefinition] = field(default_factory=dict)
    """Every version reachable through the pins of the agent the chat admitted, by (name, version)."""
    builder: CapabilityBuilder
    models: ModelResolver
    run: RunFacts
    usage: RunUsage
    """The run's delegated usage, shared by every delegate of the tree."""
    ask_user: Callable[[str], Awaitable[str]] | None = None
    """Passed on to every level of the tree: a delegate's own delegates ask the same person."""
    traced: tuple[AbstractCapability[Any], ...] = ()
    """pydantic-ai's `Instrumentation` when the gateway traces, for every level of the tree; empty otherwise."""

    def delegation(self, *, depth_left: int | None, specialists: dict[str, dict[str, Any]]) -> Delegates:
        """This agent's delegation: its facts, and this builder. `specialists` is the run's own dict for the
        agent a chat admitted (restored from a parked run, added to by `create_agent`), a fresh one below it."""
        pinned = tuple(name for name in self.parent.subagents if self._pinned(name) is not None)
        facts = DelegationFacts(parent_model=self.parent.model, model_names=self.models.names,
                                depth_left=depth_left, ask_user=self.ask_user, pinned=pinned,
                                specialists=specialists)
        return Delegates(facts=facts, builder=self)

    def resolve_model(self, name: str) -> Any:
        return self.models.resolve(name)

    def agent_description(self, name: str) -> str | None:
        version = self._pinned(name)
        return None if version is None else version.spec.description

    def charge(self, usage: RequestUsage) -> None:
        charge_to(self.usage, usage)

    def build_agent(self, name: str, *, depth_left: int, share: Sequence[str],
                    extra: Sequence[AbstractCapability[Any]]) -> BuiltDelegate:
        version = self._pinned(name)
        if version is None:
            raise LookupError(f"{name!r} is not a delegate this agent pinned")
        spec = version.spec
        bound = {entry.id for entry in spec.capabilities}
        entries = [*spec.capabilities, *(entry for entry in self._lent(share) if entry.id not in bound)]
        child = replace(self, parent=spec, pins=version.pins).delegation(depth_left=depth_left, specialists={})
        return self._built(spec.name, spec.model, spec.instructions, entries, extra, delegates=child, spec=spec,
                           lent=frozenset(entry.id for entry in self._lent(share) if entry.id not in bound))

    def build_specialist(self, *, name: str, instructions: str, model: str, model_settings: Any = None,
                         share: Sequence[str], extra: Sequence[AbstractCapability[Any]]) -> BuiltDelegate:
        entries = self._lent(share)
        return self._built(name, model, instructions, entries, extra, delegates=None, model_settings=model_settings,
                           lent=frozenset(entry.id for entry in entries))

    def _pinned(self, name: str) -> AgentDefinition | None:
        """The version of `name` the delegating agent's own version pinned."""
        version = self.pins.get(name)
        return None if version is None else self.versions.get((name, version))

    def _lent(self, share: Sequence[str]) -> list[CapabilityEntry]:
        """The delegating agent's own entries for the shared ids; one never lent (`CapabilityDef.lendable`) is
        dropped even from a spec stored before publishing refused it, so sharing can never widen a delegate."""
        registry = self.builder.capabilities.registry
        return [entry for entry in self.parent.capabilities
                if entry.id in share and entry.enabled and (definition := registry.get(entry.id)) is not None
                and definition.lendable]

    def _built(self, name: str, model: str, instructions: str, entries: list[CapabilityEntry],
               extra: Sequence[AbstractCapability[Any]], *, delegates: Delegates | None,
               model_settings: Any = None, spec: AgentSpec | None = None,
               lent: frozenset[str] = frozenset()) -> BuiltDelegate:
        """`spec`: a pinned delegate's own, whose resources it gets; a specialist keeps its caller's, which is
        all that its lent capabilities may reach. `lent`: the capabilities the delegate runs on the agent's own
        entries of, sharing what they keep for the run (one workspace); one the delegate binds itself keeps its
        own, in memory for its run."""
        resources = self.run.resources if spec is None else resources_of(spec)
        run = replace(self.run, state=None, resuming=False, delegates=delegates, resources=resources, lent=lent,
                      kept={capability: kept for capability, kept in self.run.kept.items() if capability in lent})
        built, policy = self.builder.build(entries, run)
        agent: Agent[Any, Output] = Agent(
            self.models.resolve(model), output_type=[str, DeferredToolRequests], name=name,
            instructions=instructions or None, model_settings=model_settings,
            capabilities=[*self.traced, *built, policy, *extra])
        return BuiltDelegate(agent=agent, stable_id=policy.stable_id)


def _defers_mcp_tools(spec: AgentSpec, registry: Registry) -> bool:
    """A bound capability finds the MCP tools (`tool_search`), so they are loaded deferred."""
    return any(entry.enabled and (definition := registry.get(entry.id)) is not None and definition.defers_mcp_tools
               for entry in spec.capabilities)


def resources_of(spec: AgentSpec) -> SpecResources:
    """What `spec` binds by name from the config's top level."""
    return SpecResources(collections=tuple(spec.collections), context_files=tuple(spec.context_files),
                         skill_folders=tuple(spec.skill_folders))


def charge_to(ledger: RunUsage, usage: RequestUsage) -> None:
    """One model request made outside the agent's own loop (a delegate's, an image model's) on the run's ledger."""
    ledger.requests += 1
    ledger.incr(usage)


def _binding_grants(binding: Binding, capabilities: BoundRegistry) -> list[CapabilityEntry]:
    """Capabilities granted per bot binding (`channel_tools`), attached like a spec's entries."""
    return [CapabilityEntry(id=capability, config=grant) for capability in capabilities.binding_only
            if (grant := getattr(binding.spec, capability, None)) is not None]


def _gated_tools(definition: CapabilityDef[Any], entry: CapabilityEntry, binding_modes: Mapping[str, str],
                 provider: frozenset[str]) -> set[str]:
    """Binding per-tool mode, else spec per-tool mode, else the entry's mode; `default` follows the tool. A tool
    the model provider runs is never gated: no gate can hold it, and an entry asking for one was refused above."""
    gated = set()
    for tool in definition.tools:
        mode = binding_modes.get(tool.id) or entry.tool_approval.get(tool.id) or entry.approval
        if tool.id in provider:
            continue
        if mode == "required" or (mode == "default" and tool.side_effecting):
            gated.add(tool.id)
    return gated
