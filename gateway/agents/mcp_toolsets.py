"""The pydantic-ai toolset of one configured MCP server (`gateway/agents/mcp_servers.py` imports this module when
a run first binds a server: the MCP client stack is heavy, and most gateways bind none)."""

from __future__ import annotations

from typing import Any

from fastmcp.client.transports import StdioTransport
from pydantic_ai.mcp import MCPToolset

from gateway.config.schema import McpServerSpec, resolve_template
from gateway.config.secrets import SecretSource


def build_toolset(server: McpServerSpec, secrets: SecretSource) -> MCPToolset[Any]:
    """The pydantic-ai toolset of one server, its `${ENV_VAR}` references filled in; raises `ConfigError`
    naming the field when one is unset."""
    where = f"mcp_servers.{server.name}"
    common: dict[str, Any] = {"id": server.name, "include_instructions": False, "init_timeout": server.timeout,
                              "read_timeout": max(server.timeout, 60.0)}
    if server.url is not None:
        headers = {name: resolve_template(value, secrets, field=f"{where}.headers.{name}")
                   for name, value in server.headers.items()}
        return MCPToolset(server.url, headers=headers or None, **common)
    env = {name: resolve_template(value, secrets, field=f"{where}.env.{name}") for name, value in server.env.items()}
    assert server.command is not None  # the schema requires url or command
    return MCPToolset(StdioTransport(command=server.command, args=list(server.args), env=env), **common)
