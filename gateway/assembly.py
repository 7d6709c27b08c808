"""Assembles the pydantic-ai agent for one run from the agent spec, the binding and the registry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset

from adapters.base import ChatAddress, Directory
from capabilities.registry import BuildContext, CapabilityDef, ConversationState, NoConfig, Registry, config_for
from gateway.bindings import Binding
from gateway.channel_context import binding_instructions
from gateway.config import CapabilityEntry
from gateway.model_profiles import ModelResolver

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
            wrapped = wrapped.approval_required(lambda _ctx, tool_def, _args: tool_def.name in self.gated)
        if self.names:
            wrapped = wrapped.renamed({visible: stable for stable, visible in self.names.items()})
        return wrapped

    async def _describe(self, _ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return [_redescribed(t, self.descriptions.get(t.name)) for t in tool_defs]

    def stable_id(self, visible_name: str) -> str:
        return next((stable for stable, visible in self.names.items() if visible == visible_name), visible_name)


@dataclass(frozen=True, slots=True, kw_only=True)
class AssembledAgent:
    agent: Agent[Any, Output]
    policy: ToolPolicy


def assemble(binding: Binding, *, registry: Registry, models: ModelResolver, is_direct: bool,
             stores: Mapping[str, Any] | None = None, address: ChatAddress | None = None,
             directory: Directory | None = None, state: ConversationState | None = None,
             resuming: bool = False) -> AssembledAgent:
    spec = binding.agent.spec
    room = address.channel_id if address is not None else None
    binding_text = binding_instructions(binding.spec.instructions, directory, room)
    instructions = [text for text in (spec.instructions, binding_text) if not isinstance(text, str) or text.strip()]
    turn = BuildContext(config=NoConfig(), is_direct=is_direct, stores=stores or {}, address=address,
                        directory=directory, state=state, resuming=resuming)
    built: list[AbstractCapability[Any]] = []
    gated: set[str] = set()
    names: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    for entry in [*spec.capabilities, *_binding_grants(binding, registry)]:
        definition = registry.get(entry.id)
        if not entry.enabled or definition is None:
            continue
        capability = definition.build(replace(turn, config=config_for(definition, entry.config)))
        if capability is None:
            continue
        built.append(capability)
        gated |= _gated_tools(definition, entry, binding.spec.approvals.tool_approval)
        for tool_id, override in entry.tool_overrides.items():
            if "name" in override:
                names[tool_id] = override["name"]
            if "description" in override:
                descriptions[tool_id] = override["description"]
    policy = ToolPolicy(gated=frozenset(gated), names=names, descriptions=descriptions)
    agent: Agent[Any, Output] = Agent(models.resolve(spec.model), output_type=[str, DeferredToolRequests],
                                      instructions=instructions or None, name=spec.name,
                                      capabilities=[*built, policy])
    return AssembledAgent(agent=agent, policy=policy)


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
