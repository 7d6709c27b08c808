"""Assembles the pydantic-ai agent for one run from the agent spec, the binding and the registry."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_ai.usage import RunUsage

from adapters.base import ChatAddress, Directory
from capabilities.registry import BuildContext, CapabilityDef, ConversationState, NoConfig, Registry, config_for
from gateway.agents.bindings import AgentDefinition, Binding
from gateway.agents.channel_context import binding_instructions
from gateway.agents.models import ModelResolver
from gateway.config.schema import AgentSpec, CapabilityEntry

Output = str | DeferredToolRequests


@dataclass
class ToolPolicy(AbstractCapability[Any]):
    """Approval gates and model-facing names, keyed by each tool's stable id (wrapping, not flags).

    The wrapped toolset still carries the stable ids as names; the gate is decided on them, and
    only the outermost layer renames, so a renamed tool keeps its gate.
    """

    gated: frozenset[str] = frozenset()
    names: Mapping[str, str] = field(default_factory=dict)
    """Stable id → the name the model sees."""
    descriptions: Mapping[str, str] = field(default_factory=dict)

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any] | None:
        wrapped = toolset
        if self.descriptions:
            wrapped = wrapped.prepared(self._describe)
        if self.gated:
            wrapped = wrapped.approval_required(
                lambda ctx, tool_def, _args: tool_def.name in self.gated and not in_background(ctx))
            wrapped = RefusedInBackground(wrapped, gated=self.gated)
        if self.names:
            wrapped = wrapped.renamed({visible: stable for stable, visible in self.names.items()})
        return wrapped

    async def _describe(self, _ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return [_redescribed(t, self.descriptions.get(t.name)) for t in tool_defs]

    def stable_id(self, visible_name: str) -> str:
        return next((stable for stable, visible in self.names.items() if visible == visible_name), visible_name)


BACKGROUND_REFUSAL = ("Not run: this tool needs a person's approval, and a background delegation cannot stop to "
                      "ask one. Say so in your answer; the agent that delegated to you can hand this work over "
                      "with mode='sync'.")


def in_background(ctx: RunContext[Any]) -> bool:
    """True inside a background delegation, where nobody is left to ask for an approval."""
    return bool(getattr(ctx.deps, "background", False))


@dataclass
class RefusedInBackground(WrapperToolset[Any]):
    """A gated tool called inside a background delegation is refused with a sentence, not parked."""

    gated: frozenset[str] = frozenset()

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: Any) -> Any:
        if name in self.gated and in_background(ctx) and not ctx.tool_call_approved:
            return BACKGROUND_REFUSAL
        return await super().call_tool(name, tool_args, ctx, tool)


@dataclass(frozen=True, slots=True, kw_only=True)
class AssembledAgent:
    agent: Agent[Any, Output]
    policy: ToolPolicy
    delegated: RunUsage = field(default_factory=RunUsage)
    """What this run's delegates spent: added to the run's own usage in its row."""
    specialists: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The specialists the model wrote in this run (`create_agent`), by name: what a park carries."""


def assemble(binding: Binding, *, registry: Registry, models: ModelResolver, is_direct: bool,
             stores: Mapping[str, Any] | None = None, address: ChatAddress | None = None,
             directory: Directory | None = None, state: ConversationState | None = None,
             resuming: bool = False, agents: Mapping[str, AgentSpec] | None = None,
             history: Mapping[tuple[str, int], AgentDefinition] | None = None,
             ask_user: Callable[[str], Awaitable[str]] | None = None,
             specialists: Sequence[Mapping[str, Any]] = ()) -> AssembledAgent:
    """`agents` are the delegates the agent pinned, at their pinned versions, and `history` every version
    reachable through pins (`BindingStore.versions`). `ask_user` is how a synchronous delegate's question
    reaches the run's person (`allow_questions`); None: no delegate is offered `ask_parent`. `specialists`
    are the model-written ones a parked run carried, registered again when it continues."""
    from gateway.agents.delegates import GatewayDelegates

    spec = binding.agent.spec
    room = address.channel_id if address is not None else None
    binding_text = binding_instructions(binding.spec.instructions, directory, room)
    instructions = [text for text in (spec.instructions, binding_text) if not isinstance(text, str) or text.strip()]
    turn = BuildContext(config=NoConfig(), is_direct=is_direct, stores=stores or {}, address=address,
                        directory=directory, state=state, resuming=resuming)
    modes = binding.spec.approvals.tool_approval
    delegated = RunUsage()
    kept = {str(specialist["name"]): dict(specialist) for specialist in specialists if "name" in specialist}
    delegates = GatewayDelegates(parent=spec, agents=agents or {}, pins=binding.agent.pins, history=history,
                                 registry=registry, models=models, binding_modes=modes, turn=turn, usage=delegated,
                                 ask_user=ask_user, specialists=kept)
    built, policy = build_capabilities([*spec.capabilities, *_binding_grants(binding, registry)], registry=registry,
                                       turn=replace(turn, delegates=delegates), binding_modes=modes)
    agent: Agent[Any, Output] = Agent(models.resolve(spec.model), output_type=[str, DeferredToolRequests],
                                      instructions=instructions or None, name=spec.name,
                                      capabilities=[*built, policy])
    return AssembledAgent(agent=agent, policy=policy, delegated=delegated, specialists=kept)


def build_capabilities(entries: list[CapabilityEntry], *, registry: Registry, turn: BuildContext,
                       binding_modes: Mapping[str, str]) -> tuple[list[AbstractCapability[Any]], ToolPolicy]:
    """Each enabled entry's capability for this run, and the policy gating and renaming their tools."""
    built: list[AbstractCapability[Any]] = []
    gated: set[str] = set()
    names: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    for entry in entries:
        definition = registry.get(entry.id)
        if not entry.enabled or definition is None:
            continue
        capability = definition.build(replace(turn, config=config_for(definition, entry.config)))
        if capability is None:
            continue
        built.append(capability)
        gated |= _gated_tools(definition, entry, binding_modes)
        for tool_id, override in entry.tool_overrides.items():
            if "name" in override:
                names[tool_id] = override["name"]
            if "description" in override:
                descriptions[tool_id] = override["description"]
    return built, ToolPolicy(gated=frozenset(gated), names=names, descriptions=descriptions)


def _binding_grants(binding: Binding, registry: Registry) -> list[CapabilityEntry]:
    """Capabilities granted per bot binding (`channel_tools`), attached like a spec's entries."""
    return [CapabilityEntry(id=definition.id, config=grant) for definition in registry
            if definition.binding_only and (grant := getattr(binding.spec, definition.id, None)) is not None]


def _gated_tools(definition: CapabilityDef, entry: CapabilityEntry, binding_modes: Mapping[str, str]) -> set[str]:
    """Binding per-tool mode, else spec per-tool mode, else the entry's mode; `default` follows the tool."""
    gated = set()
    for tool in definition.tools:
        mode = binding_modes.get(tool.id) or entry.tool_approval.get(tool.id) or entry.approval
        if mode == "required" or (mode == "default" and tool.side_effecting):
            gated.add(tool.id)
    return gated


def _redescribed(tool_def: ToolDefinition, description: str | None) -> ToolDefinition:
    return tool_def if description is None else replace(tool_def, description=description)
