"""An oversized tool return is reduced once, when it is produced: spilled, truncated or summarized."""

from __future__ import annotations

import re
from typing import Any

from pydantic_ai import FunctionToolset, ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.capabilities import Capability
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from capabilities import default_registry
from capabilities.registry import CapabilityDef, Registry, ToolInfo
from capabilities.run import BuildContext
from tests.support.capability_runs import assembled, binding_with, run, tool_defs

LOG = "\n".join(f"line {n}: {'ok ' * 20}" for n in range(400))
"""About 26,000 characters: past the default threshold of 10,000."""


def log_registry() -> Registry:
    def build(_context: BuildContext[Any]) -> Capability[Any]:
        toolset = FunctionToolset(id="logs")

        @toolset.tool_plain
        def fetch_log() -> str:
            """Fetch the build log."""
            return LOG
        return Capability(toolsets=[toolset])

    logs = CapabilityDef(id="logs", name="Logs", category="utility", description="Build logs.", build=build,
                         tools=(ToolInfo(id="fetch_log", summary="Fetch the build log."),))
    return default_registry().with_extra(logs)


def returns(messages: list[ModelMessage]) -> list[str]:
    return [str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, ToolReturnPart)]


async def run_limited(config: dict[str, Any], model: FunctionModel) -> str:
    binding = binding_with([{"id": "logs"}, {"id": "tool_output_limits", "config": config}])
    return str((await run(assembled(binding, model, registry=log_registry()), "check the build",
                          binding=binding)).output)


async def test_a_spilled_result_is_read_back_a_slice_at_a_time() -> None:
    offered: list[AgentInfo] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append(info)
        seen = returns(messages)
        if not seen:
            return ModelResponse(parts=[ToolCallPart("fetch_log", {}, tool_call_id="c1")])
        if len(seen) == 1:
            handle = re.search(r"stored to handle '([^']+)'", seen[0])
            assert handle is not None and len(seen[0]) < 3000
            return ModelResponse(parts=[ToolCallPart("read_tool_result", {"handle": handle[1], "pattern": "line 37:"},
                                                     tool_call_id="c2")])
        return ModelResponse(parts=[TextPart(seen[-1])])

    answer = await run_limited({}, FunctionModel(model))
    assert answer.startswith("[handle ") and "1 matching line(s); showing 1" in answer
    assert answer.endswith("\nline 37: " + "ok " * 20)
    assert "read_tool_result" in tool_defs(offered)


async def test_a_truncated_result_keeps_both_ends_and_offers_no_reader() -> None:
    offered: list[AgentInfo] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append(info)
        seen = returns(messages)
        if not seen:
            return ModelResponse(parts=[ToolCallPart("fetch_log", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart(seen[0])])

    answer = await run_limited({"action": "truncate", "max_chars": 1000}, FunctionModel(model))
    assert len(answer) <= 1000 and answer.startswith("line 0:") and "line 399:" in answer
    assert "read_tool_result" not in tool_defs(offered)


async def test_a_summarized_result_is_what_the_model_reads() -> None:
    def model(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        prompt = str(messages[-1].parts[-1].content)
        if "too large to keep in full" in prompt:
            return ModelResponse(parts=[TextPart("400 lines, all ok.")])
        seen = returns(messages)
        if not seen:
            return ModelResponse(parts=[ToolCallPart("fetch_log", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart(seen[0])])

    assert "400 lines, all ok." in await run_limited({"action": "summarize"}, FunctionModel(model))


async def test_a_failed_summary_falls_back_to_a_spill() -> None:
    def model(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        if "too large to keep in full" in str(messages[-1].parts[-1].content):
            raise RuntimeError("the summarizer is down")
        seen = returns(messages)
        if not seen:
            return ModelResponse(parts=[ToolCallPart("fetch_log", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart(seen[0])])

    assert "stored to handle" in await run_limited({"action": "summarize"}, FunctionModel(model))


async def test_a_renamed_reader_is_named_in_the_spill_marker() -> None:
    def model(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        seen = returns(messages)
        if not seen:
            return ModelResponse(parts=[ToolCallPart("fetch_log", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart(seen[0])])

    binding = binding_with([{"id": "logs"}, {"id": "tool_output_limits",
                                             "tool_overrides": {"read_tool_result": {"name": "read_stored_output"}}}])
    result = await run(assembled(binding, FunctionModel(model), registry=log_registry()), "go", binding=binding)
    assert "Read it with read_stored_output(handle=" in str(result.output)
