"""`tool_search`: the agent finds MCP tools when it needs them instead of carrying every schema on every request.

Binding it is what defers the MCP toolsets (`CapabilityDef.defers_mcp_tools`): the registry's own tools stay
visible, the MCP tools are hidden until the model's search finds them. Deferral changes what the model sees,
never a tool's identity: a discovered tool arrives under its prefixed name, so its approval gate and a binding's
rename still hold, and pydantic-ai's `ToolSearch` sits outermost, reading the names a rename already applied.
No custom search callable is offered: one that called a model would spend tokens no budget meters.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai.capabilities import ToolSearch

from capabilities.context import BuildContext
from capabilities.registry import CapabilityDef


class ToolSearchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    strategy: Literal["auto", "keywords", "bm25", "regex"] = "auto"
    """`auto`: the provider's native search where it has one, local keyword matching elsewhere (never fails);
    `keywords`: always local; `bm25` / `regex`: Anthropic's native search, an error on other providers."""
    max_results: int = Field(default=10, ge=1, le=50)
    """Matches the local search returns; native search ignores it."""


def build(context: BuildContext[ToolSearchConfig]) -> ToolSearch | None:
    """Nothing to attach when the run reached no MCP server: there is nothing deferred to find."""
    if not context.run.mcp_servers:
        return None
    config = context.config
    return ToolSearch(strategy=None if config.strategy == "auto" else config.strategy, max_results=config.max_results)


CAPABILITY = CapabilityDef(id="tool_search", name="Tool search", category="utility", tools=(),
                           config=ToolSearchConfig, build=build, defers_mcp_tools=True,
                           description="Hides the MCP servers' tools until the model searches for them, so a "
                                       "large set costs nothing on requests that do not need it.")
