"""Approval gates and model-facing names around a run's toolsets, keyed by each tool's stable id."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset

from capabilities.run import RunDeps

BACKGROUND_REFUSAL = ("Not run: this tool needs a person's approval, and a background delegation cannot stop to "
                      "ask one. Say so in your answer; the agent that delegated to you can hand this work over "
                      "with mode='sync'.")


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
    gated_when: Callable[[ToolDefinition], bool] | None = None
    """Gates for tools whose ids are known only once a server lists them (MCP), decided on their definition."""

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any] | None:
        wrapped = toolset
        if self.descriptions:
            wrapped = wrapped.prepared(self._describe)
        if self.gated or self.gated_when is not None:
            wrapped = wrapped.approval_required(
                lambda ctx, tool_def, _args: self.needs_approval(tool_def) and not in_background(ctx))
            wrapped = RefusedInBackground(wrapped, needs_approval=self.needs_approval)
        if self.names:
            wrapped = wrapped.renamed({visible: stable for stable, visible in self.names.items()})
        return wrapped

    async def _describe(self, _ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return [_redescribed(t, self.descriptions.get(t.name)) for t in tool_defs]

    def needs_approval(self, tool_def: ToolDefinition) -> bool:
        """Keyed on the stable id: the wrapped toolset still names each tool by it."""
        return tool_def.name in self.gated or (self.gated_when is not None and self.gated_when(tool_def))

    def stable_id(self, visible_name: str) -> str:
        return next((stable for stable, visible in self.names.items() if visible == visible_name), visible_name)


def in_background(ctx: RunContext[RunDeps]) -> bool:
    """True inside a background delegation, where nobody is left to ask for an approval."""
    return ctx.deps.background


@dataclass
class RefusedInBackground(WrapperToolset[Any]):
    """A gated tool called inside a background delegation is refused with a sentence, not parked."""

    needs_approval: Callable[[ToolDefinition], bool] = lambda _tool_def: False

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[RunDeps], tool: Any) -> Any:
        if self.needs_approval(tool.tool_def) and in_background(ctx) and not ctx.tool_call_approved:
            return BACKGROUND_REFUSAL
        return await super().call_tool(name, tool_args, ctx, tool)


def _redescribed(tool_def: ToolDefinition, description: str | None) -> ToolDefinition:
    return tool_def if description is None else replace(tool_def, description=description)
