"""`gateway mcp probe NAME`: connect to one configured MCP server and list its tools as agents would get them.

Tool names are the server's to choose, so `gateway check` cannot know them; this is how an operator finds the
prefixed ids to write into `tool_approval` and `tool_overrides`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from gateway.cli.failures import CONFIG_EXIT, OperatorError
from gateway.config.secrets import SecretSource

mcp_app = typer.Typer(help="MCP servers: see what a configured server offers.", no_args_is_help=True)


@mcp_app.command("probe")
def probe_server(name: Annotated[str, typer.Argument(help="The server's name in mcp_servers.")],
                 config: Annotated[Path, typer.Option("--config", "-c", "--file", "-f",
                                                      help="Path to gateway.yaml.")] = Path("gateway.yaml")) -> None:
    """Connect to server NAME once and list its tools: prefixed id, read-only or not, whether it asks first."""
    # Imported when the command runs, as `gateway/cli/main.py` says why.
    from gateway.agents.mcp_servers import describe, probe
    from gateway.config.schema import Settings, load_config

    loaded = load_config(config)
    server = next((s for s in loaded.mcp_servers if s.name == name), None)
    if server is None:
        known = ", ".join(s.name for s in loaded.mcp_servers) or "none configured"
        raise OperatorError(f"{config}: {name!r} is not one of mcp_servers ({known})", exit_code=CONFIG_EXIT)
    try:
        tools = asyncio.run(probe(server, SecretSource.load(Settings().secrets_file)))
    except Exception as exc:  # whatever the server did, the operator gets one line, never a traceback
        raise OperatorError(f"{name}: cannot be reached ({describe(exc)}); agents that bind it go without its "
                            "tools until it answers", exit_code=1) from None
    typer.echo(f"{name}: {len(tools)} tool(s)")
    width = max((len(tool.tool_id) for tool in tools), default=0)
    for tool in tools:
        marked = "read-only" if tool.read_only else "not read-only"
        state = (f"left out: {tool.left_out}" if tool.left_out
                 else f"{marked}, {'asks first' if tool.asks else 'runs without asking'}")
        typer.echo(f"  {tool.tool_id.ljust(width)}  {state}  {tool.description}")
