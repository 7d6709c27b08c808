"""`tool_search`: binding it defers the MCP tools, the registry's stay visible, and a found tool keeps its gate."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai import DeferredToolRequests, ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.support.capability_runs import recording, tool_defs
from tests.support.mcp_fakes.http_server import TOKEN, http_mcp_server_in_thread
from tests.support.mcp_runs import mcp_binding, run_once

KEY = {"ISSUES_MCP_TOKEN": TOKEN}
PLANNING = {"id": "planning"}


@pytest.fixture(scope="module")
def tracker() -> Iterator[dict[str, Any]]:
    with http_mcp_server_in_thread() as url:
        yield {"name": "issues", "url": url, "headers": {"Authorization": "Bearer ${ISSUES_MCP_TOKEN}"}}


def searching(query: str, then: str, args: dict[str, object]) -> tuple[FunctionModel, list[set[str]]]:
    """Searches for `query`, then calls `then` if the search found it; records the tool names of each request."""
    offered: list[set[str]] = []

    def step(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append({tool.name for tool in info.function_tools})
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("search_tools", {"queries": [query]}, tool_call_id="search")])
        if then in offered[-1] and len(messages) == 3:
            return ModelResponse(parts=[ToolCallPart(then, args, tool_call_id="call")])
        return ModelResponse(parts=[TextPart("not found")])
    return FunctionModel(step), offered


def agent(*capabilities: dict[str, Any], use: Any = "issues") -> dict[str, Any]:
    return {"mcp_servers": [use], "capabilities": list(capabilities)}


async def test_binding_it_hides_the_mcp_tools_and_leaves_the_registry_tools_visible(tracker: dict[str, Any]) -> None:
    model, seen = recording()
    await run_once(mcp_binding(agent(PLANNING, {"id": "tool_search", "config": {"strategy": "keywords"}})), model,
                   servers=[tracker], secrets=KEY)
    offered = set(tool_defs(seen))
    assert "search_tools" in offered and "write_plan" in offered
    assert not [name for name in offered if name.startswith("issues_")]


async def test_without_it_every_mcp_tool_is_offered_and_nothing_searches(tracker: dict[str, Any]) -> None:
    model, seen = recording()
    await run_once(mcp_binding(agent(PLANNING)), model, servers=[tracker], secrets=KEY)
    assert "issues_create_issue" in tool_defs(seen) and "search_tools" not in tool_defs(seen)


async def test_a_found_tool_keeps_its_prefixed_name_and_its_gate(tracker: dict[str, Any]) -> None:
    model, offered = searching("create issue", "issues_create_issue", {"project": "web", "title": "x"})
    result = await run_once(mcp_binding(agent({"id": "tool_search", "config": {"strategy": "keywords"}})), model,
                            servers=[tracker], secrets=KEY)
    assert "issues_create_issue" not in offered[0] and "issues_create_issue" in offered[1]
    assert isinstance(result.output, DeferredToolRequests)
    assert [call.tool_name for call in result.output.approvals] == ["issues_create_issue"]


async def test_a_found_renamed_tool_arrives_under_its_new_name_and_still_asks(tracker: dict[str, Any]) -> None:
    use = {"server": "issues", "tool_overrides": {"issues_create_issue": {"name": "file_bug"}}}
    model, offered = searching("file_bug", "file_bug", {"project": "web", "title": "x"})
    result = await run_once(mcp_binding(agent({"id": "tool_search"}, use=use)), model, servers=[tracker],
                            secrets=KEY)
    assert "file_bug" in offered[1] and "issues_create_issue" not in set().union(*offered)
    assert isinstance(result.output, DeferredToolRequests)
    assert [call.tool_name for call in result.output.approvals] == ["file_bug"]


async def test_max_results_bounds_what_a_local_search_finds(tracker: dict[str, Any]) -> None:
    model, offered = searching("issue issues project", "none", {})
    config = {"strategy": "keywords", "max_results": 1}
    await run_once(mcp_binding(agent({"id": "tool_search", "config": config})), model, servers=[tracker], secrets=KEY)
    assert len([name for name in offered[1] if name.startswith("issues_")]) == 1


@pytest.mark.parametrize(("strategy", "native"), [("bm25", "bm25"), ("regex", "regex"), ("auto", None)])
async def test_the_strategy_picks_the_providers_native_search(tracker: dict[str, Any], strategy: str,
                                                              native: str | None) -> None:
    """The scripted model stands for a provider with native tool search: `bm25` and `regex` are asked of it by
    name (and required: `optional` false), `auto` lets it choose and may fall back."""
    model, seen = recording()
    await run_once(mcp_binding(agent({"id": "tool_search", "config": {"strategy": strategy}})), model,
                   servers=[tracker], secrets=KEY)
    [search] = [tool for tool in seen[0].model_request_parameters.native_tools if tool.kind == "tool_search"]
    assert search.strategy == native and search.optional is (native is None)


async def test_with_no_server_reached_it_is_not_attached(tracker: dict[str, Any]) -> None:
    model, seen = recording()
    await run_once(mcp_binding({"capabilities": [{"id": "tool_search", "config": {"strategy": "bm25"}}]}), model,
                   servers=[tracker], secrets=KEY)
    assert "search_tools" not in tool_defs(seen)
