"""Capabilities with no tools: what they change reaches the model."""

from __future__ import annotations

import pytest
from pydantic_ai import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile

from tests.support.capability_runs import assembled, binding_with, recording, run


@pytest.mark.parametrize(("config", "sent"), [({"effort": "high"}, "high"), ({}, True)], ids=["high", "unset"])
async def test_thinking_asks_a_thinking_model_for_the_configured_effort(config: dict[str, str], sent: object) -> None:
    seen: list[AgentInfo] = []

    def answer(_messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(parts=[TextPart("ok")])

    model = FunctionModel(answer, profile=ModelProfile(supports_thinking=True))
    binding = binding_with([{"id": "thinking", "config": config}])
    await run(assembled(binding, model), "hi", binding=binding)
    assert seen[0].model_request_parameters.thinking == sent


async def test_clock_puts_the_time_in_the_configured_zone_into_the_instructions() -> None:
    model, seen = recording()
    binding = binding_with([{"id": "clock", "config": {"timezone": "Europe/Warsaw"}}], instructions="Be brief.")
    await run(assembled(binding, model), "hi", binding=binding)
    assert "Be brief." in (seen[0].instructions or "")
    assert "(Europe/Warsaw)" in (seen[0].instructions or "")
