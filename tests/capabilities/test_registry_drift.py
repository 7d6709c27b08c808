"""The registry declares what each capability offers; a real run offers exactly that, for every config."""

from __future__ import annotations

import pytest

from capabilities import default_registry
from capabilities.registry import config_for
from capabilities.subagents.config import NEVER_OFFERED
from tests.support.capability_runs import CASES, Case, offered_tool_defs


def test_every_registered_capability_has_a_drift_case() -> None:
    assert {case.capability for case in CASES} == {definition.id for definition in default_registry()}


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
async def test_the_tools_offered_are_the_tools_declared_for_this_config(case: Case) -> None:
    definition = default_registry().get(case.capability)
    assert definition is not None
    offered = await offered_tool_defs(case)
    assert set(offered) == definition.offered_tools(config_for(definition, case.config))


def test_every_declared_tool_is_offered_under_some_config() -> None:
    registry = default_registry()
    for definition in registry:
        offered = {tool for case in CASES if case.capability == definition.id
                   for tool in definition.offered_tools(config_for(definition, case.config))}
        never = set(NEVER_OFFERED) if definition.id == "subagents" else set()
        assert offered == {tool.id for tool in definition.tools} - never, definition.id


def test_answer_subagent_is_declared_so_it_can_be_gated_and_renamed_but_never_offered() -> None:
    definition = default_registry().get("subagents")
    assert definition is not None and definition.tool("answer_subagent") is not None
    assert all("answer_subagent" not in definition.offered_tools(config_for(definition, case.config))
               for case in CASES if case.capability == "subagents")
