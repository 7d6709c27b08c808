"""Every tool a model is offered says what it does, what each argument means, and what comes back."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent, RunContext

from capabilities.run.tool_replies import ToolText, function_toolset
from tests.support.capability_runs import CASES, Case, offered_tool_defs, recording, tool_defs


async def look_up(ctx: RunContext[Any], query: str, limit: int = 20) -> str:
    """Look something up.

    Use it when you need a fact.

    Args:
        query: What to look for.
        limit: How many results, at most 200.

    Returns:
        One line per result.
    """
    return query


async def test_tool_text_renders_exactly_what_pydantic_ai_renders_from_a_docstring() -> None:
    model, seen = recording()
    await Agent(model, toolsets=[function_toolset([look_up], toolset_id="t")]).run("hi")
    built = tool_defs(seen)["look_up"]
    text = ToolText(summary="Look something up.\n\nUse it when you need a fact.", returns="One line per result.")
    assert text.render() == built.description


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
async def test_every_offered_tool_carries_a_summary_described_arguments_and_a_return_shape(case: Case) -> None:
    for name, tool in (await offered_tool_defs(case)).items():
        description = tool.description or ""
        assert description.startswith("<summary>") and "</summary>" in description, name
        summary = description.removeprefix("<summary>").split("</summary>")[0]
        assert len(summary.split()) >= 5, name
        assert "<returns>" in description and "<description>" in description, name
        for argument, schema in tool.parameters_json_schema.get("properties", {}).items():
            assert schema.get("description"), f"{name}.{argument} is not described"
