"""What `gateway check` refuses about MCP servers beyond their schema: prefixes that could collide, tool names no
model could call, and renames of MCP tools that are not names."""

from __future__ import annotations

from capabilities.registry import CALLABLE_NAME, Registry, override_problems
from gateway.config.schema import AgentSpec, GatewayConfig

MAX_TOOL_NAME = 64
"""What the model providers accept as a tool name."""


def mcp_problems(config: GatewayConfig, registry: Registry) -> list[str]:
    """Each problem with `mcp_servers` and the agents' bindings of them, naming the field and the fix."""
    registry_tools = sorted({tool.id for definition in registry for tool in definition.tools})
    problems: list[str] = []
    for i, server in enumerate(config.mcp_servers):
        where = f"mcp_servers[{i}]"
        prefix = f"{server.name}_"
        for other in config.mcp_servers[:i]:
            if other.name != server.name and (prefix.startswith(f"{other.name}_")
                                              or f"{other.name}_".startswith(prefix)):
                problems.append(f"{where}.name: {server.name!r} and {other.name!r} prefix each other, so a tool "
                                f"{prefix}… could belong to either; rename one of them")
        shadowed = [tool for tool in registry_tools if tool.startswith(prefix)]
        if shadowed:
            problems.append(f"{where}.name: {server.name!r} prefixes the capability tool(s) {', '.join(shadowed)}, "
                            "so an MCP tool could take one of their names; rename the server")
        for k, tool in enumerate(server.allowed_tools or ()):
            name = server.prefixed(tool)
            if len(name) > MAX_TOOL_NAME or not CALLABLE_NAME.match(name):
                problems.append(f"{where}.allowed_tools[{k}]: {name!r} is not a name a model can call (letters, "
                                f"digits, _ and -, up to {MAX_TOOL_NAME} with the prefix); a shorter server name "
                                "helps, or leave the tool out")
    for i, agent in enumerate(config.agents):
        taken = _capability_tool_names(agent, registry)
        for j, use in enumerate(agent.mcp_servers):
            for tool_id, override in use.tool_overrides.items():
                where = f"agents[{i}].mcp_servers[{j}].tool_overrides.{tool_id}"
                if "name" in override and override["name"] in taken:
                    problems.append(f"{where}.name: {override['name']!r} is already the name of "
                                    f"{taken[override['name']]}; give each tool a name of its own")
                taken.setdefault(override.get("name", tool_id), tool_id)
                problems += override_problems(override, where)
    return problems


def _capability_tool_names(agent: AgentSpec, registry: Registry) -> dict[str, str]:
    """The names the model sees for the agent's capability tools, each with the tool it names."""
    names: dict[str, str] = {}
    for entry in agent.capabilities:
        definition = registry.get(entry.id)
        if definition is None or not entry.enabled:
            continue
        for tool in definition.tools:
            names.setdefault(entry.tool_overrides.get(tool.id, {}).get("name", tool.id), f"{entry.id}.{tool.id}")
    return names
