"""The tools and builder of `tool_search`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/tool_search/__init__.py`."""

from __future__ import annotations

from pydantic_ai.capabilities import ToolSearch

from capabilities.run import BuildContext
from capabilities.tool_search import ToolSearchConfig


def build(context: BuildContext[ToolSearchConfig]) -> ToolSearch | None:
    """Nothing to attach when the run reached no MCP server: there is nothing deferred to find."""
    if not context.run.mcp_servers:
        return None
    config = context.config
    return ToolSearch(strategy=None if config.strategy == "auto" else config.strategy, max_results=config.max_results)
