"""The pydantic-ai toolset of one configured MCP server (`gateway/agents/mcp_servers.py` imports this module when
a run first binds a server: the MCP client stack is heavy, and most gateways bind none).

An HTTP server is reached through the URL guard's client (`capabilities/run/guarded_http.py`): the host the operator
configured may be on the local network (only cloud metadata is refused there), and any other host a redirect
leads to is checked like a fetch the model chose, each connection going to the address that was checked.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx2
from fastmcp.client.transports import SSETransport, StdioTransport, StreamableHttpTransport
from fastmcp.mcp_config import infer_transport_type_from_url
from pydantic_ai.mcp import MCPToolset

from capabilities.run.guarded_http import guarded_client
from capabilities.run.url_guard import Resolver, system_resolver
from gateway.config.schema import McpServerSpec, resolve_template
from gateway.config.secrets import SecretLookup

DEFAULT_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
"""The MCP SDK's own client timeouts, for a transport that names none."""


def guarded_factory(url: str, resolver: Resolver) -> Any:
    """The `httpx_client_factory` FastMCP's HTTP transports call for each session: a guarded client."""
    host = urlsplit(url).hostname or ""

    def factory(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: Any = None,
                follow_redirects: bool = True) -> httpx2.AsyncClient:
        return guarded_client(resolver, trusted=(host,), headers=headers, timeout=timeout or DEFAULT_TIMEOUT,
                              auth=auth, follow_redirects=follow_redirects)
    return factory


def http_transport(url: str, headers: dict[str, str], resolver: Resolver,
                   read_timeout: float) -> SSETransport | StreamableHttpTransport:
    factory = guarded_factory(url, resolver)
    if infer_transport_type_from_url(url) == "sse":
        return SSETransport(url=url, headers=headers, sse_read_timeout=read_timeout, httpx_client_factory=factory)
    return StreamableHttpTransport(url=url, headers=headers, httpx_client_factory=factory)


def build_toolset(server: McpServerSpec, secrets: SecretLookup,
                  resolver: Resolver = system_resolver) -> MCPToolset[Any]:
    """The pydantic-ai toolset of one server, its `${ENV_VAR}` references filled in; raises `ConfigError`
    naming the field when one is unset."""
    where = f"mcp_servers.{server.name}"
    common: dict[str, Any] = {"id": server.name, "include_instructions": False, "init_timeout": server.timeout,
                              "read_timeout": max(server.timeout, 60.0)}
    if server.url is not None:
        headers = {name: resolve_template(value, secrets, field=f"{where}.headers.{name}")
                   for name, value in server.headers.items()}
        return MCPToolset(http_transport(server.url, headers, resolver, common["read_timeout"]), **common)
    env = {name: resolve_template(value, secrets, field=f"{where}.env.{name}") for name, value in server.env.items()}
    assert server.command is not None  # the schema requires url or command
    return MCPToolset(StdioTransport(command=server.command, args=list(server.args), env=env), **common)
