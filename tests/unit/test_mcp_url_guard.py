"""MCP HTTP servers through the URL guard: the configured host is looked up by the gateway's resolver and reached at
the address it answered, with its own name in the Host header (an operator's server may be local); a name that
answers with a cloud metadata address is never connected to, and the server is skipped for the turn."""

from __future__ import annotations

import logging

import pytest

from tests.support.capability_runs import recording, tool_defs
from tests.support.loopback import counting_listener
from tests.support.mcp_fakes.http_server import TOKEN, http_mcp_server
from tests.support.mcp_runs import mcp_binding, run_once
from tests.support.scripted import calls_then_answers

ISSUES = {"mcp_servers": ["issues"]}
NAMES = {"mcp.corp.test": ["127.0.0.1"], "rebound.corp.test": ["::ffff:0:a9fe:a9fe"]}


async def table_resolver(host: str) -> list[str]:
    return NAMES[host]



async def test_the_configured_host_is_reached_at_the_address_the_gateways_resolver_answered() -> None:
    async with http_mcp_server(host="mcp.corp.test") as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        server = {"name": "issues", "url": f"http://mcp.corp.test:{port}/mcp",
                  "headers": {"Authorization": "Bearer ${ISSUES_MCP_TOKEN}"}}
        result = await run_once(mcp_binding(ISSUES), calls_then_answers(("issues_list_issues", {"project": "web"})),
                                servers=[server], secrets={"ISSUES_MCP_TOKEN": TOKEN}, resolver=table_resolver)
    assert result.output == "done: web: #1 login fails, #2 slow search"


async def test_a_configured_name_answering_with_a_metadata_address_is_never_connected(
        caplog: pytest.LogCaptureFixture) -> None:
    async with counting_listener() as (port, connections):
        server = {"name": "issues", "url": f"http://rebound.corp.test:{port}/mcp", "timeout": 10}
        model, seen = recording("answered without it")
        with caplog.at_level(logging.WARNING, logger="gateway.agents.mcp_servers"):
            result = await run_once(mcp_binding(ISSUES), model, servers=[server], resolver=table_resolver)
    assert result.output == "answered without it" and not tool_defs(seen)
    assert "MCP server 'issues' skipped" in caplog.text and "cloud-metadata address" in caplog.text
    assert connections == []
