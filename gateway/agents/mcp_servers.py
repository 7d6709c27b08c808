"""The MCP servers an operator connected (`mcp_servers` in gateway.yaml), reached for one run at a time.

Each run connects to the servers its agent binds and lists their tools, one server after the other within
that server's `timeout`; a server that fails is skipped for that turn with one log line, and the turn goes on
without its tools. The connections are entered in the runtime's own task and held for the run (the agent's own
entry only counts up), so they close in the task that opened them.

A server's tools arrive as `<server>_<tool>`, and that prefixed name is the stable id the approval gate and a
binding's renames key on. By default every MCP tool asks, unless the server marks it read-only
(`readOnlyHint`) or the config says `never`. What a server says about itself is not trusted: its
instructions are never put into the agent's (`include_instructions=False`), and its tools' results pass the
run's guardrails like any tool result.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset

from capabilities.registry import CALLABLE_NAME
from capabilities.run.url_guard import Resolver, system_resolver
from gateway.agents.tool_policy import ToolPolicy
from gateway.config.schema import AgentSpec, McpBinding, McpServerSpec
from gateway.config.secrets import SecretLookup

if TYPE_CHECKING:
    from pydantic_ai.mcp import MCPToolset

log = logging.getLogger(__name__)

def secret_values(servers: Sequence[McpServerSpec], secrets: SecretLookup) -> list[str]:
    """The values the servers' references resolve to: for the log redactor."""
    names = {match for server in servers for value in (*server.headers.values(), *server.env.values())
             for match in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", value)}
    return [value for name in sorted(names) if (value := secrets.get(name))]


def offered(server: McpServerSpec, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
    """The server's allowed tools, under their prefixed names, leaving out names no model could call."""
    allowed = None if server.allowed_tools is None else frozenset(server.allowed_tools)
    kept = toolset if allowed is None else toolset.filtered(lambda _ctx, tool_def: tool_def.name in allowed)
    return kept.prefixed(server.name).filtered(lambda _ctx, tool_def: bool(CALLABLE_NAME.match(tool_def.name)))


def read_only(tool_def: ToolDefinition) -> bool:
    """The server marked the tool read-only (`readOnlyHint`); a tool without annotations is not."""
    annotations = (tool_def.metadata or {}).get("annotations") or {}
    return annotations.get("readOnlyHint") is True


def approval_mode(server: McpServerSpec, use: McpBinding, tool_id: str, binding_modes: Mapping[str, str]) -> str:
    """The bot binding's mode for the tool, else the agent's, else the server's per-tool one, else the agent's
    mode for the server, else the server's."""
    return (binding_modes.get(tool_id) or use.tool_approval.get(tool_id) or server.tool_approval.get(tool_id)
            or (use.approval if use.approval != "default" else server.approval))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectedServer:
    server: McpServerSpec
    use: McpBinding
    toolset: MCPToolset[Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectedServers:
    """The MCP servers one run reached: their tools for the agent, and the gates and names on those tools."""

    servers: tuple[ConnectedServer, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(connected.server.name for connected in self.servers)

    def toolsets(self, *, deferred: bool) -> list[AbstractToolset[Any]]:
        """Each server's offered tools; `deferred`: hidden until the model finds them (`tool_search`)."""
        toolsets = [offered(connected.server, connected.toolset) for connected in self.servers]
        return [toolset.defer_loading() for toolset in toolsets] if deferred else toolsets

    def gated_by(self, binding_modes: Mapping[str, str]) -> Callable[[ToolDefinition], bool]:
        """Whether a prefixed MCP tool asks a person first; a tool of no MCP server is not decided here."""
        by_prefix = sorted(self.servers, key=lambda connected: len(connected.server.name), reverse=True)

        def gated(tool_def: ToolDefinition) -> bool:
            connected = next((c for c in by_prefix if tool_def.name.startswith(f"{c.server.name}_")), None)
            if connected is None:
                return False
            mode = approval_mode(connected.server, connected.use, tool_def.name, binding_modes)
            return mode == "required" or (mode == "default" and not read_only(tool_def))
        return gated

    def governed(self, policy: ToolPolicy, binding_modes: Mapping[str, str]) -> ToolPolicy:
        """`policy` with these servers' gates and the agent's renames of their tools."""
        if not self.servers:
            return policy
        names = dict(policy.names)
        descriptions = dict(policy.descriptions)
        for connected in self.servers:
            for tool_id, override in connected.use.tool_overrides.items():
                if "name" in override:
                    names[tool_id] = override["name"]
                if "description" in override:
                    descriptions[tool_id] = override["description"]
        return replace(policy, names=names, descriptions=descriptions, gated_when=self.gated_by(binding_modes))


NO_SERVERS = ConnectedServers()
"""A run of an agent that binds no MCP server."""


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServers:
    """The operator's MCP servers, by name; `connect` reaches the ones an agent binds for one run."""

    servers: Mapping[str, McpServerSpec]
    secrets: SecretLookup = field(repr=False)
    """Never in a repr: a `SecretSource` prints the values it holds."""
    resolver: Resolver = system_resolver
    """Where the servers' names are looked up before the URL guard checks their addresses."""

    @classmethod
    def of(cls, servers: Sequence[McpServerSpec], secrets: SecretLookup,
           resolver: Resolver = system_resolver) -> McpServers:
        return cls(servers={server.name: server for server in servers}, secrets=secrets, resolver=resolver)

    @asynccontextmanager
    async def connect(self, spec: AgentSpec) -> AsyncIterator[ConnectedServers]:
        """The servers `spec` binds that answered, connected until the block ends; the others are skipped."""
        async with AsyncExitStack() as stack:
            connected = []
            for use in spec.mcp_servers:
                server = self.servers.get(use.server)
                if not use.enabled or server is None:
                    if use.enabled:
                        log.warning("agent %r binds the MCP server %r, which is not configured; skipped",
                                    spec.name, use.server)
                    continue
                toolset = await self._reached(stack, server, agent=spec.name)
                if toolset is not None:
                    connected.append(ConnectedServer(server=server, use=use, toolset=toolset))
            yield ConnectedServers(servers=tuple(connected))

    async def _reached(self, stack: AsyncExitStack, server: McpServerSpec, *, agent: str) -> MCPToolset[Any] | None:
        """The server's toolset, entered into `stack` with its tools listed; None (and one log line) when it
        cannot be reached, whatever the reason: one server must never take the turn down."""
        try:
            toolset = _toolset(server, self.secrets, self.resolver)
            async with AsyncExitStack() as own, asyncio.timeout(server.timeout):
                await own.enter_async_context(toolset)
                await toolset.list_tools()
                stack.push_async_callback(_close_quietly, server.name, own.pop_all())
        except Exception as exc:  # any failure of a server (refused, timed out, broken) skips it for this turn
            log.warning("MCP server %r skipped for this turn of agent %r: %s", server.name, agent, describe(exc))
            return None
        return toolset


def _toolset(server: McpServerSpec, secrets: SecretLookup, resolver: Resolver = system_resolver) -> MCPToolset[Any]:
    """The MCP client stack (fastmcp, the MCP SDK: some 40 MB and a second of imports) loads with the first server a
    run binds, not with every gateway."""
    from gateway.agents.mcp_toolsets import build_toolset
    return build_toolset(server, secrets, resolver)


async def _close_quietly(name: str, opened: AsyncExitStack) -> None:
    try:
        await opened.aclose()
    except Exception as exc:  # the run is over and booked: a server that fails to close must not undo that
        log.warning("MCP server %r did not close cleanly: %s", name, describe(exc))


def describe(exc: BaseException) -> str:
    """One line for a connection failure, the innermost cause of an exception group included."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbedTool:
    """One tool a server lists, as `gateway mcp probe` shows it."""

    tool_id: str
    """The prefixed name: the stable id approvals and renames key on."""
    description: str
    read_only: bool
    asks: bool
    """Whether the server's own settings gate it (an agent's binding or a bot's may still change that)."""
    left_out: str | None = None
    """Why agents are not offered it; None when they are."""


async def probe(server: McpServerSpec, secrets: SecretLookup) -> list[ProbedTool]:
    """Connects to `server` once and lists its tools; raises what the connection raised."""
    toolset = _toolset(server, secrets)
    async with asyncio.timeout(server.timeout), toolset:
        listed = await toolset.list_tools()
    gated = ConnectedServers(servers=(ConnectedServer(server=server, use=McpBinding(server=server.name),
                                                      toolset=toolset),)).gated_by({})
    tools = []
    for tool in listed:
        tool_def = ToolDefinition(name=server.prefixed(tool.name), description=tool.description,
                                  metadata={"annotations": tool.annotations.model_dump(by_alias=True)
                                            if tool.annotations else None})
        left_out = ("not in allowed_tools" if server.allowed_tools is not None and tool.name not in server.allowed_tools
                    else None if CALLABLE_NAME.match(tool_def.name) else "not a name a model can call (too long?)")
        tools.append(ProbedTool(tool_id=tool_def.name, description=(tool.description or "").strip().split("\n")[0],
                                read_only=read_only(tool_def), asks=gated(tool_def), left_out=left_out))
    return tools
