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

from capabilities.registry import CapabilityDef, Deferred


class ToolSearchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    strategy: Literal["auto", "keywords", "bm25", "regex"] = "auto"
    """`auto`: the provider's native search where it has one, local keyword matching elsewhere (never fails);
    `keywords`: always local; `bm25` / `regex`: Anthropic's native search, an error on other providers."""
    max_results: int = Field(default=10, ge=1, le=50)
    """Matches the local search returns; native search ignores it."""


CAPABILITY = CapabilityDef(id="tool_search", name="Tool search", category="utility", tools=(),
                           config=ToolSearchConfig,
    build=Deferred("capabilities.tool_search.build:build"), defers_mcp_tools=True,
                           description="Hides the MCP servers' tools until the model searches for them, so a "
                                       "large set costs nothing on requests that do not need it.")
