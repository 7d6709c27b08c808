"""Every delegation mistake is refused when the spec is applied, with its field and the fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from capabilities import default_registry
from capabilities.registry.config_errors import Problem
from gateway.checks.model_setup import ModelSetup
from gateway.checks.report import model_problems
from gateway.checks.validation import apply_problems
from gateway.config.schema import GatewayConfig
from gateway.config.secrets import SecretSource

RESEARCHER = {"name": "researcher", "description": "Researches.", "instructions": "Research.", "model": "fast"}


def config(subagents: dict[str, Any] | None, *, pinned: list[str] | None = None,
           capabilities: list[Any] | None = None) -> GatewayConfig:
    entries = [*(capabilities or []), *([subagents] if subagents is not None else [])]
    agents = [{"name": "lead", "model": "fast", "subagents": pinned or [], "capabilities": entries},
              {"name": "writer", "model": "fast", "description": "Writes."}]
    bot = {"name": "tg", "platform": "telegram", "token": "${TOKEN}", "agent": "lead"}
    return GatewayConfig.model_validate({"models": {"fast": "openai:gpt-4o"}, "agents": agents, "bots": [bot]})


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    subagents: dict[str, Any] | None = None
    pinned: list[str] = field(default_factory=list)
    capabilities: list[Any] = field(default_factory=list)
    problem: str


def entry(enabled: bool = True, **settings: Any) -> dict[str, Any]:
    return {"id": "subagents", "enabled": enabled, "config": settings}


CASES = [
    Case(id="disabled-but-pinning", subagents=entry(False), pinned=["writer"],
         problem="agents[0].capabilities[0].enabled: 'subagents' is disabled but still names delegates (writer); a "
                 "disabled binding calls none of them, so remove them, or enable the binding"),
    Case(id="disabled-but-inline", subagents=entry(False, inline=[RESEARCHER]),
         problem="agents[0].capabilities[0].enabled: 'subagents' is disabled but still names delegates "
                 "(researcher); a disabled binding calls none of them, so remove them, or enable the binding"),
    Case(id="pinning-without-the-capability", pinned=["writer"],
         problem="agents[0].subagents: names delegates (writer) but the agent does not bind 'subagents'; add it to "
                 "capabilities, or remove the list"),
    Case(id="unknown-agent", subagents=entry(), pinned=["ghost"],
         problem="agents[0].subagents[0]: 'ghost' is not an agent in this config; known: lead, writer"),
    Case(id="pinned-twice", subagents=entry(), pinned=["writer", "writer"],
         problem="agents[0].subagents[1]: 'writer' is named twice"),
    Case(id="sharing-what-is-not-bound", subagents=entry(inline=[RESEARCHER], share_with_delegates=["planning"]),
         problem="agents[0].capabilities[0].config.share_with_delegates[0]: 'planning' is not bound by this agent; "
                 "it can only lend a capability it holds itself"),
    Case(id="sharing-subagents", subagents=entry(inline=[RESEARCHER], share_with_delegates=["subagents"]),
         problem="agents[0].capabilities[0].config.share_with_delegates[0]: 'subagents' cannot be shared; whether "
                 "a delegate may delegate is decided by its own spec"),
    Case(id="depth-zero", subagents=entry(inline=[RESEARCHER], max_depth=0),
         problem="agents[0].capabilities[0].config.max_depth: 0 is not a depth (1 to 3); to switch delegation off, "
                 "disable the binding (enabled: false)"),
    Case(id="depth-too-deep", subagents=entry(inline=[RESEARCHER], max_depth=4),
         problem="agents[0].capabilities[0].config.max_depth: Input should be less than or equal to 3 (got 4)"),
    Case(id="fanout-out-of-range", subagents=entry(inline=[RESEARCHER], max_fanout=11),
         problem="agents[0].capabilities[0].config.max_fanout: Input should be less than or equal to 10 (got 11)"),
    Case(id="result-chars-out-of-range", subagents=entry(inline=[RESEARCHER], max_result_chars=100),
         problem="agents[0].capabilities[0].config.max_result_chars: Input should be greater than or equal to 200 "
                 "(got 100)"),
    Case(id="mode-not-a-choice", subagents=entry(inline=[RESEARCHER], mode="later"),
         problem="agents[0].capabilities[0].config.mode: 'later' is not one of sync, async, auto"),
    Case(id="specialist-without-a-model",
         subagents=entry(inline=[{k: v for k, v in RESEARCHER.items() if k != "model"}]),
         problem="agents[0].capabilities[0].config.inline[0].model: Field required"),
    Case(id="specialist-named-like-a-pin", subagents=entry(inline=[{**RESEARCHER, "name": "writer"}]),
         pinned=["writer"],
         problem="agents[0].capabilities[0].config.inline[0].name: 'writer' is also pinned in subagents; give each "
                 "delegate a name of its own"),
    Case(id="specialists-with-one-name", subagents=entry(inline=[RESEARCHER, RESEARCHER]),
         problem="agents[0].capabilities[0].config.inline[1].name: 'researcher' is used twice"),
    Case(id="menu-key-not-on-the-menu", subagents=entry(inline=[{**RESEARCHER, "models": ["deep"]}],
                                                        models={"quick": "fast"}),
         problem="agents[0].capabilities[0].config.inline[0].models[0]: 'deep' is not a key of "
                 "agents[0].capabilities[0].config.models (keys: quick)"),
    Case(id="controls-for-no-delegate", subagents=entry(inline=[RESEARCHER], delegates={"editor": {"max_calls": 2}}),
         problem="agents[0].capabilities[0].config.delegates.editor: 'editor' is neither pinned in subagents nor "
                 "defined in agent_folders (an inline specialist carries its controls itself)"),
    Case(id="negative-timeout", subagents=entry(inline=[{**RESEARCHER, "timeout_seconds": 0}]),
         problem="agents[0].capabilities[0].config.inline[0].timeout_seconds: Input should be greater than 0 (got 0)"),
    Case(id="missing-agent-folder", subagents=entry(agent_folders=["/nonexistent/agents"]),
         problem="agents[0].capabilities[0].config.agent_folders[0]: '/nonexistent/agents' is not a folder"),
    Case(id="override-for-no-file",
         subagents=entry(inline=[RESEARCHER], agent_overrides={"critic": {"effort": "high"}}),
         problem="agents[0].capabilities[0].config.agent_overrides.critic: no agent file defines 'critic'"),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
def test_a_delegation_mistake_is_refused_with_its_field_and_fix(case: Case) -> None:
    applied = config(case.subagents, pinned=case.pinned, capabilities=case.capabilities)
    assert apply_problems(applied, default_registry()) == [case.problem]


@pytest.mark.parametrize(("subagents", "problem"), [
    pytest.param(entry(inline=[{**RESEARCHER, "model": "gpt"}]),
                 Problem(loc=("agents", 0, "capabilities", 0, "config", "inline", 0, "model"),
                         message="'gpt' is neither a profile in models (fast) nor a model string such as "
                                 "'openai-chat:gpt-4o' (Unknown model: gpt. Did you mean 'openai-chat:gpt-5'?)"),
                 id="specialist-on-an-unknown-model"),
    pytest.param(entry(inline=[RESEARCHER], models={"deep": {"model": "opneai:gpt-4o"}}),
                 Problem(loc=("agents", 0, "capabilities", 0, "config", "models", "deep", "model"),
                         message="Unknown model: opneai:gpt-4o. Did you mean 'openai:gpt-4o'?"),
                 id="menu-on-an-unknown-provider"),
])
def test_a_delegate_on_a_model_nobody_configured_is_refused(subagents: dict[str, Any], problem: Problem,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # pydantic-ai reads provider keys from the environment
    applied = config(subagents)
    assert model_problems(applied, ModelSetup(applied.models, SecretSource(environ={}))) == ([problem], [])


def test_an_ungranted_delegation_scope_refuses_every_spec_that_delegates() -> None:
    from capabilities.registry import ALL_SCOPES

    registry = type(default_registry())(list(default_registry()), granted_scopes=ALL_SCOPES - {"agents:delegate"})
    assert apply_problems(config(entry(inline=[RESEARCHER])), registry) == [
        "agents[0].capabilities[0].id: 'subagents' needs scope(s) agents:delegate, which this deployment does not "
        "grant"]


def test_a_delegating_spec_from_the_catalog_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "critic.md").write_text("---\nname: critic\ndescription: Criticizes\n---\nBe harsh.\n")
    settings = entry(inline=[{**RESEARCHER, "mode": "async", "models": ["quick"], "usage_limits": {"request_limit": 5},
                              "timeout_seconds": 60, "max_calls": 2, "on_failure": "Go on without it.",
                              "contain_errors": False}],
                     mode="auto", max_depth=2, max_fanout=5, max_result_chars=4000, allow_dynamic=True,
                     share_with_delegates=["planning"], models={"quick": "fast", "deep": {"model": "fast",
                                                                                          "effort": "high"}},
                     delegates={"writer": {"mode": "sync", "models": ["deep"]}, "critic": {"max_calls": 1}},
                     agent_folders=[str(tmp_path)], agent_overrides={"critic": {"model": "fast", "effort": "low"}})
    applied = config(settings, pinned=["writer"], capabilities=["planning"])
    assert apply_problems(applied, default_registry()) == []
