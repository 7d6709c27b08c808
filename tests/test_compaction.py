"""Each compaction strategy trims what a long run sends the model, through a real run."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import FunctionToolset, ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.capabilities import Capability
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from capabilities import default_registry
from capabilities.registry import BuildContext, CapabilityDef, Registry, ToolInfo
from tests.capability_runs import assembled, binding_with, run
from tests.scripted import answers, calls_then_answers

SMALL_WINDOW = {"context_window": 1000, "max_fraction": 0.2}
"""Compaction starts at about 200 tokens: after one bulky tool result, or a few long turns."""
SUMMARY = "The user asked for three reports; all three were fetched."


def report_registry() -> Registry:
    def build(_context: BuildContext) -> Capability[Any]:
        toolset = FunctionToolset(id="reports")

        @toolset.tool_plain
        def fetch_report(name: str) -> str:
            """Fetch a report.

            Args:
                name: The report's name.
            """
            return f"report {name}: " + "figures " * 300
        return Capability(toolsets=[toolset])

    reports = CapabilityDef(id="reports", name="Reports", category="utility", description="Reports.", build=build,
                            tools=(ToolInfo(id="fetch_report", summary="Fetch a report."),))
    return default_registry().with_extra(reports)


def long_history(turns: int) -> list[ModelMessage]:
    history: list[ModelMessage] = []
    for i in range(turns):
        history += [ModelRequest(parts=[UserPromptPart(f"question {i}: " + "context " * 60)]),
                    ModelResponse(parts=[TextPart(f"answer {i}")])]
    return history


def watching(final: FunctionModel) -> tuple[FunctionModel, list[list[ModelMessage]]]:
    """`final`'s behaviour, recording each main request's messages; summary requests get SUMMARY."""
    requests: list[list[ModelMessage]] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if "summarization assistant" in (info.instructions or ""):
            return ModelResponse(parts=[TextPart(SUMMARY)])
        requests.append(messages)
        return final.function(messages, info)  # type: ignore[misc]
    return FunctionModel(reply), requests


def text_of(messages: list[ModelMessage]) -> str:
    return "\n".join(str(getattr(part, "content", "")) for m in messages for part in m.parts)


async def run_with(config: dict[str, Any], model: FunctionModel, history: list[ModelMessage] | None = None) -> None:
    binding = binding_with([{"id": "reports"}, {"id": "compaction", "config": {**SMALL_WINDOW, **config}}])
    await run(assembled(binding, model, registry=report_registry()), "go", binding=binding, history=history)


async def test_clear_tool_results_empties_old_results() -> None:
    model, requests = watching(calls_then_answers(("fetch_report", {"name": "a"}), ("fetch_report", {"name": "b"})))
    await run_with({"strategy": "clear_tool_results", "keep_tool_pairs": 0}, model)
    returns = [p for m in requests[-1] for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [str(p.content) for p in returns] == ["[tool result cleared]", "[tool result cleared]"]


async def test_a_sliding_window_drops_the_oldest_turns() -> None:
    model, requests = watching(answers("ok"))
    await run_with({"strategy": "sliding_window", "keep_messages": 3}, model, history=long_history(8))
    assert len(requests[-1]) < 10
    assert "question 0" in text_of(requests[-1]) and "question 6" not in text_of(requests[-1])


@pytest.mark.parametrize("strategy", ["summarize", "tiered"])
async def test_a_summary_replaces_the_older_turns(strategy: str) -> None:
    model, requests = watching(answers("ok"))
    await run_with({"strategy": strategy, "keep_messages": 2}, model, history=long_history(8))
    seen = text_of(requests[-1])
    assert SUMMARY in seen and "question 3" not in seen


async def test_tiered_clears_tool_results_before_it_pays_for_a_summary() -> None:
    model, requests = watching(calls_then_answers(("fetch_report", {"name": "a"}), ("fetch_report", {"name": "b"})))
    await run_with({"strategy": "tiered", "keep_tool_pairs": 0}, model)
    seen = text_of(requests[-1])
    assert "[tool result cleared]" in seen and SUMMARY not in seen
