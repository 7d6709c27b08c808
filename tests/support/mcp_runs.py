"""Agents assembled with MCP servers connected, as the runtime does for one run, against the test servers."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic_ai import AgentRunResult
from pydantic_ai.models import Model

from capabilities import default_registry
from capabilities.registry import Registry
from capabilities.run.url_guard import Resolver, system_resolver
from gateway.agents.assembly import AssembledAgent
from gateway.agents.bindings import AgentDefinition, Binding
from gateway.agents.mcp_servers import ConnectedServers, McpServers
from gateway.agents.models import ModelResolver
from gateway.config.schema import AgentSpec, BindingSpec, McpServerSpec
from gateway.config.secrets import SecretSource
from tests.support.capability_runs import MemoryState, assemble, deps_for, run_facts

SERVER_SCRIPT = Path(__file__).parent / "mcp_fakes" / "issues_server.py"
STDIO: dict[str, Any] = {"name": "issues", "command": sys.executable, "args": [str(SERVER_SCRIPT)]}
"""The issue tracker over stdio, as an operator configures a local command."""


def mcp_binding(agent: Mapping[str, Any], *, binding: Mapping[str, Any] | None = None) -> Binding:
    spec = AgentSpec.model_validate({"name": "assistant", "model": "scripted", **agent})
    return Binding(bot_name="helper", agent=AgentDefinition(name="assistant", version=1, spec=spec),
                   spec=BindingSpec.model_validate(dict(binding or {})))


@asynccontextmanager
async def connected(binding: Binding, servers: Sequence[Mapping[str, Any]] = (STDIO,),
                    secrets: Mapping[str, str] | None = None,
                    resolver: Resolver = system_resolver) -> AsyncIterator[ConnectedServers]:
    """The servers `binding`'s agent binds, connected as for one run, their names looked up by `resolver`."""
    specs = [McpServerSpec.model_validate(dict(server)) for server in servers]
    servers_of = McpServers.of(specs, SecretSource(environ=dict(secrets or {})), resolver=resolver)
    async with servers_of.connect(binding.agent.spec) as mcp:
        yield mcp


def assembled_with(binding: Binding, model: Model, mcp: ConnectedServers, *,
                   registry: Registry | None = None) -> AssembledAgent:
    models = ModelResolver({}, SecretSource(environ={}), fixed={"scripted": model})
    run = run_facts(binding, state=MemoryState(), mcp_servers=mcp.names)
    return assemble(binding, registry=registry or default_registry(), models=models, run=run, mcp=mcp)


async def run_once(binding: Binding, model: Model, *, servers: Sequence[Mapping[str, Any]] = (STDIO,),
                   secrets: Mapping[str, str] | None = None, registry: Registry | None = None,
                   resolver: Resolver = system_resolver) -> AgentRunResult[Any]:
    """One run of `binding`'s agent with its MCP servers connected."""
    async with connected(binding, servers, secrets, resolver) as mcp:
        agent = assembled_with(binding, model, mcp, registry=registry)
        return await agent.agent.run("hi", deps=deps_for(binding))
