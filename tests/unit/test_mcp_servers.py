"""MCP servers as a tool source: prefixed tools, gates on the prefixed id, servers that are down, the HTTP transport."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import DeferredToolRequests
from pydantic_ai.models.function import AgentInfo

from tests.support.capability_runs import recording, tool_defs
from tests.support.harness import free_port
from tests.support.mcp_fakes.http_server import TOKEN, http_mcp_server, http_mcp_server_in_thread
from tests.support.mcp_fakes.issues_server import INSTRUCTIONS
from tests.support.mcp_runs import STDIO, mcp_binding, run_once
from tests.support.scripted import calls_then_answers

ISSUES = {"mcp_servers": ["issues"]}
CREATE = ("issues_create_issue", {"project": "web", "title": "login fails"})
LIST = ("issues_list_issues", {"project": "web"})


@pytest.fixture(scope="module")
def tracker() -> Iterator[dict[str, Any]]:
    """The issue tracker over streamable HTTP, as `issues`, for the whole module (a stdio server takes seconds
    to start)."""
    with http_mcp_server_in_thread() as url:
        yield {"name": "issues", "url": url, "headers": {"Authorization": "Bearer ${ISSUES_MCP_TOKEN}"}}


KEY = {"ISSUES_MCP_TOKEN": TOKEN}


def instructions_seen(seen: list[AgentInfo]) -> str:
    return "\n".join(info.instructions or "" for info in seen)


async def test_a_servers_tools_arrive_prefixed_with_its_name_and_only_those_allowed() -> None:
    model, seen = recording()
    server = {**STDIO, "allowed_tools": ["list_issues", "create_issue", "delete_project"]}
    await run_once(mcp_binding(ISSUES), model, servers=[server])
    assert set(tool_defs(seen)) == {"issues_list_issues", "issues_create_issue", "issues_delete_project"}


async def test_the_servers_instructions_never_reach_the_model(tracker: dict[str, Any]) -> None:
    model, seen = recording()
    await run_once(mcp_binding({**ISSUES, "instructions": "You track issues."}), model, servers=[tracker],
                   secrets=KEY)
    assert "You track issues." in instructions_seen(seen) and INSTRUCTIONS not in instructions_seen(seen)


async def test_an_agent_that_binds_no_server_gets_none_of_its_tools(tracker: dict[str, Any]) -> None:
    model, seen = recording()
    await run_once(mcp_binding({}), model, servers=[tracker], secrets=KEY)
    assert not [name for name in tool_defs(seen) if name.startswith("issues_")]


@dataclass(frozen=True, slots=True, kw_only=True)
class Gate:
    id: str
    call: tuple[str, dict[str, object]]
    asks: bool
    server: dict[str, Any] = field(default_factory=dict)
    agent: dict[str, Any] = field(default_factory=lambda: {"server": "issues"})
    binding: dict[str, Any] = field(default_factory=dict)


GATES = (
    Gate(id="an-unannotated-tool-asks-by-default", call=CREATE, asks=True),
    Gate(id="a-read-only-tool-runs-without-asking", call=LIST, asks=False),
    Gate(id="the-server-config-says-never", call=CREATE, asks=False,
         server={"tool_approval": {"issues_create_issue": "never"}}),
    Gate(id="the-server-config-requires-all", call=LIST, asks=True, server={"approval": "required"}),
    Gate(id="the-agent-says-never-for-the-server", call=CREATE, asks=False,
         agent={"server": "issues", "approval": "never"}),
    Gate(id="the-agents-per-tool-mode-beats-the-servers", call=CREATE, asks=True,
         server={"approval": "never"},
         agent={"server": "issues", "tool_approval": {"issues_create_issue": "required"}}),
    Gate(id="the-bot-binding-gates-a-read-only-tool", call=LIST, asks=True,
         binding={"approvals": {"tool_approval": {"issues_list_issues": "required"}}}),
)


@pytest.mark.parametrize("gate", [pytest.param(gate, id=gate.id) for gate in GATES])
async def test_the_gate_is_decided_on_the_prefixed_id(gate: Gate, tracker: dict[str, Any]) -> None:
    binding = mcp_binding({"mcp_servers": [gate.agent]}, binding=gate.binding)
    result = await run_once(binding, calls_then_answers(gate.call), servers=[{**tracker, **gate.server}],
                            secrets=KEY)
    if gate.asks:
        assert isinstance(result.output, DeferredToolRequests)
        assert [call.tool_name for call in result.output.approvals] == [gate.call[0]]
    else:
        assert isinstance(result.output, str) and result.output.startswith("done: ")


async def test_a_renamed_tool_keeps_its_gate(tracker: dict[str, Any]) -> None:
    binding = mcp_binding({"mcp_servers": [{"server": "issues", "tool_overrides": {
        "issues_create_issue": {"name": "file_bug", "description": "File a bug."}}}]})
    model, seen = recording()
    await run_once(binding, model, servers=[tracker], secrets=KEY)
    assert tool_defs(seen)["file_bug"].description == "File a bug." and "issues_create_issue" not in tool_defs(seen)
    result = await run_once(binding, calls_then_answers(("file_bug", {"project": "web", "title": "x"})),
                            servers=[tracker], secrets=KEY)
    assert isinstance(result.output, DeferredToolRequests)
    assert [call.tool_name for call in result.output.approvals] == ["file_bug"]


async def test_a_server_that_is_down_is_skipped_with_a_log_line_and_the_run_answers(
        caplog: pytest.LogCaptureFixture, tracker: dict[str, Any]) -> None:
    down = {"name": "tracker", "url": f"http://127.0.0.1:{free_port()}/mcp", "timeout": 5}
    model, seen = recording("still here")
    with caplog.at_level(logging.WARNING, logger="gateway.agents.mcp_servers"):
        result = await run_once(mcp_binding({"mcp_servers": ["tracker", "issues"]}), model, servers=[down, tracker],
                                secrets=KEY)
    assert result.output == "still here"
    assert "issues_list_issues" in tool_defs(seen) and not [n for n in tool_defs(seen) if n.startswith("tracker_")]
    assert "MCP server 'tracker' skipped for this turn" in caplog.text


async def test_a_command_that_does_not_start_is_skipped_too(caplog: pytest.LogCaptureFixture) -> None:
    broken = {"name": "broken", "command": "/nonexistent/mcp-server", "timeout": 5}
    model, _seen = recording("still here")
    with caplog.at_level(logging.WARNING, logger="gateway.agents.mcp_servers"):
        result = await run_once(mcp_binding({"mcp_servers": ["broken"]}), model, servers=[broken])
    assert result.output == "still here" and "MCP server 'broken' skipped" in caplog.text


async def test_an_http_server_is_reached_with_the_header_its_reference_resolves_to() -> None:
    async with http_mcp_server() as url:
        server = {"name": "issues", "url": url, "headers": {"Authorization": "Bearer ${ISSUES_MCP_TOKEN}"}}
        result = await run_once(mcp_binding(ISSUES), calls_then_answers(LIST), servers=[server],
                                secrets={"ISSUES_MCP_TOKEN": TOKEN})
    assert result.output == "done: web: #1 login fails, #2 slow search"


async def test_an_http_server_refusing_the_token_is_skipped_and_the_secret_is_not_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    wrong = "wrong-token-7d1e9a0b"
    model, seen = recording("answered anyway")
    async with http_mcp_server() as url:
        server = {"name": "issues", "url": url, "headers": {"Authorization": "Bearer ${ISSUES_MCP_TOKEN}"}}
        with caplog.at_level(logging.DEBUG):
            result = await run_once(mcp_binding(ISSUES), model, servers=[server], secrets={"ISSUES_MCP_TOKEN": wrong})
    assert result.output == "answered anyway" and not tool_defs(seen)
    assert "MCP server 'issues' skipped" in caplog.text and wrong not in caplog.text


async def test_an_unset_header_reference_skips_the_server_naming_the_variable(
        caplog: pytest.LogCaptureFixture) -> None:
    server = {"name": "issues", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${UNSET_MCP}"}}
    model, _seen = recording("fine")
    with caplog.at_level(logging.WARNING, logger="gateway.agents.mcp_servers"):
        result = await run_once(mcp_binding(ISSUES), model, servers=[server])
    assert result.output == "fine" and "UNSET_MCP is not set" in caplog.text


async def test_mcp_results_pass_the_guardrails_tool_edge() -> None:
    key = "AKIA" + "Q" * 16
    binding = mcp_binding({**ISSUES, "capabilities": [{"id": "guardrails", "config": {"redact_secrets_tool": True}}]})
    server = {**STDIO, "env": {"NOTE_KEY": "${NOTE_KEY}"}}
    result = await run_once(binding, calls_then_answers(("issues_read_secret_note", {})), servers=[server],
                            secrets={"NOTE_KEY": key})
    assert result.output.startswith("done: the deploy key is") and key not in result.output


async def test_a_server_that_dies_during_a_call_is_told_to_the_model_and_the_turn_answers() -> None:
    result = await run_once(mcp_binding(ISSUES), calls_then_answers(("issues_server_status", {})))
    assert result.output == "done: Connection closed"
