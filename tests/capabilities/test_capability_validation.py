"""A spec is checked against the registry when it is applied, and every mistake names its field and the fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

from capabilities import default_registry
from capabilities.registry import ALL_SCOPES, CapabilityDef, KeyRequirement, Registry, ToolInfo
from gateway.checks.validation import apply_problems
from gateway.cli.main import app
from gateway.config.schema import GatewayConfig

MAILER = CapabilityDef(id="mailer", name="Mail", category="utility", description="Sends mail.",
                       tools=(ToolInfo(id="send_mail", summary="Send a mail.", side_effecting=True),),
                       key=KeyRequirement(description="an SMTP password"), build=lambda _context: None)
FETCHER = CapabilityDef(id="fetcher", name="Fetch", category="research", description="Fetches pages.",
                        tools=(ToolInfo(id="fetch_page", summary="Fetch a page."),), scopes=frozenset({"web:fetch"}),
                        build=lambda _context: None)


def registry_without_web_fetch() -> Registry:
    return Registry([*default_registry(), MAILER, FETCHER], granted_scopes=ALL_SCOPES - {"web:fetch"})


def config(capabilities: list[Any] | None = None, *, binding: dict[str, Any] | None = None) -> GatewayConfig:
    bot = {"name": "tg", "platform": "telegram", "token": "${TOKEN}", "agent": "helper", "binding": binding or {}}
    return GatewayConfig.model_validate({"agents": [{"name": "helper", "model": "openai-chat:m",
                                                     "capabilities": capabilities or []}], "bots": [bot]})


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    capabilities: list[Any] = field(default_factory=list)
    binding: dict[str, Any] = field(default_factory=dict)
    problem: str


KNOWN = ", ".join(sorted(definition.id for definition in registry_without_web_fetch()))
"""Every capability id the test registry holds, as the refusal of an unknown one lists them."""

CASES = [
    Case(id="unknown-capability", capabilities=["planing"],
         problem="agents[0].capabilities[0].id: unknown capability 'planing'; known: "
                 f"{KNOWN}"),
    Case(id="unknown-tool-in-approval", capabilities=[{"id": "planning", "tool_approval": {"write_plans": "required"}}],
         problem="agents[0].capabilities[0].tool_approval.write_plans: 'planning' has no tool 'write_plans' "
                 "(tools: write_plan, read_plan, add_task, update_task_status, update_task_statuses, remove_task, "
                 "add_subtask, set_dependency, get_available_tasks)"),
    Case(id="unknown-tool-in-override", capabilities=[{"id": "tool_output_limits",
                                                       "tool_overrides": {"read_result": {"name": "x"}}}],
         problem="agents[0].capabilities[0].tool_overrides.read_result: 'tool_output_limits' has no tool "
                 "'read_result' (tools: read_tool_result)"),
    Case(id="uncallable-name",
         capabilities=[{"id": "planning", "tool_overrides": {"write_plan": {"name": "write plan"}}}],
         problem="agents[0].capabilities[0].tool_overrides.write_plan.name: 'write plan' is not a name a model can "
                 "call (letters, digits, _ and -, up to 64, not starting with a digit)"),
    Case(id="two-tools-one-name",
         capabilities=[{"id": "planning", "tool_overrides": {"add_task": {"name": "read_plan"}}}],
         problem="agents[0].capabilities[0].tool_overrides.add_task.name: 'read_plan' is already the name of "
                 "planning.read_plan; give each tool a name of its own"),
    Case(id="override-field", capabilities=[{"id": "planning", "tool_overrides": {"add_task": {"title": "x"}}}],
         problem="agents[0].capabilities[0].tool_overrides.add_task: only name and description can be overridden, "
                 "not title"),
    Case(id="config-out-of-range", capabilities=[{"id": "compaction", "config": {"max_fraction": 1.5}}],
         problem="agents[0].capabilities[0].config.max_fraction: Input should be less than or equal to 0.95 "
                 "(got 1.5)"),
    Case(id="config-not-a-choice", capabilities=[{"id": "compaction", "config": {"strategy": "forget"}}],
         problem="agents[0].capabilities[0].config.strategy: 'forget' is not one of summarize, tiered, "
                 "clear_tool_results, sliding_window"),
    Case(id="config-unknown-setting", capabilities=[{"id": "thinking", "config": {"budget": 3}}],
         problem="agents[0].capabilities[0].config.budget: unknown setting; known: effort"),
    Case(id="summary-prompt-without-messages",
         capabilities=[{"id": "compaction", "config": {"summary_prompt": "Summarize."}}],
         problem="agents[0].capabilities[0].config.summary_prompt: must contain {messages}, where the conversation "
                 "to summarize is inserted"),
    Case(id="tool-summary-prompt-without-output",
         capabilities=[{"id": "tool_output_limits", "config": {"summary_prompt": "Summarize {tool_name}."}}],
         problem="agents[0].capabilities[0].config.summary_prompt: must contain {output}, where the tool's name "
                 "and output are inserted"),
    Case(id="bad-timezone", capabilities=[{"id": "clock", "config": {"timezone": "Mars/Olympus"}}],
         problem="agents[0].capabilities[0].config.timezone: 'Mars/Olympus' is not an IANA time zone name such as "
                 "'Europe/Warsaw' or 'UTC'"),
    Case(id="bound-twice", capabilities=["planning", {"id": "planning", "enabled": False}],
         problem="agents[0].capabilities[1].id: 'planning' is already bound at agents[0].capabilities[0]; merge the "
                 "two entries"),
    Case(id="channel-tools-in-a-spec",
         capabilities=[{"id": "channel_tools", "config": {"tools": ["get_channel_info"]}}],
         problem="agents[0].capabilities[0].id: 'channel_tools' is granted per bot binding, not in an agent spec; "
                 "remove it here and set bots[].binding.channel_tools on each bot whose chats may use it"),
    Case(id="key-without-secret", capabilities=["mailer"],
         problem="agents[0].capabilities[0].secret_id: 'mailer' needs a key (an SMTP password); name the secret "
                 "that holds it"),
    Case(id="ungranted-scope", capabilities=["fetcher"],
         problem="agents[0].capabilities[0].id: 'fetcher' needs scope(s) web:fetch, which this deployment does not "
                 "grant"),
    Case(id="binding-approval-unknown-tool", binding={"approvals": {"tool_approval": {"deploy": "required"}}},
         problem="bots[0].binding.approvals.tool_approval.deploy: no capability offers a tool 'deploy'"),
    Case(id="channel-grant-out-of-range", binding={"channel_tools": {"tools": ["get_channel_info"],
                                                                     "default_limit": 500}},
         problem="bots[0].binding.channel_tools.default_limit: Input should be less than or equal to 200 (got 500)"),
    Case(id="channel-grant-unknown-lookup", binding={"channel_tools": {"tools": ["read_history"]}},
         problem="bots[0].binding.channel_tools.tools[0]: 'read_history' is not one of get_channel_info, "
                 "list_channel_members, search_channels, read_channel_history"),
    Case(id="channel-grant-the-platform-cannot-answer",
         binding={"channel_tools": {"tools": ["get_channel_info", "search_channels", "read_channel_history"]}},
         problem="bots[0].binding.channel_tools.tools: telegram cannot answer search_channels, read_channel_history "
                 "(it answers get_channel_info, list_channel_members); remove them from this bot's grant"),
    Case(id="unknown-placeholder", binding={"instructions": "You are in {channel_title}."},
         problem="bots[0].binding.instructions: {channel_title} is not a placeholder; use one of {channel_name}, "
                 "{channel_purpose}, {channel_topic}, {member_count}, {member_list}"),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
def test_a_mistake_is_refused_with_its_field_and_fix(case: Case) -> None:
    problems = apply_problems(config(case.capabilities, binding=case.binding), registry_without_web_fetch())
    assert problems == [case.problem]


def test_a_spec_from_the_catalog_is_accepted() -> None:
    spec = [{"id": "planning", "config": {"enable_subtasks": True}, "tool_approval": {"remove_task": "required"},
             "tool_overrides": {"write_plan": {"name": "lay_out_steps", "description": "Plan the release."}}},
            {"id": "thinking", "config": {"effort": "xhigh"}},
            {"id": "system_reminders", "config": {"reminders": [{"text": "Stay on the release.", "interval": 5}],
                                                  "goal_reanchor": {"interval": 10, "max_fires": 3}}},
            {"id": "clock", "config": {"timezone": "Europe/Warsaw"}},
            {"id": "guardrails", "config": {"redact_secrets_tool": True, "blocked_keywords_in": "payroll, salary"}},
            {"id": "compaction", "config": {"strategy": "tiered", "keep_tool_pairs": 5}},
            {"id": "tool_output_limits", "config": {"action": "summarize", "threshold": 20000}}]
    binding = {"instructions": "You serve {channel_name}: {channel_purpose}.",
               "channel_tools": {"tools": ["get_channel_info", "list_channel_members"], "default_limit": 50},
               "approvals": {"tool_approval": {"list_channel_members": "required"}}}
    assert apply_problems(config(spec, binding=binding), default_registry()) == []


def test_a_tool_id_declared_by_two_capabilities_is_refused_when_the_registry_is_built() -> None:
    twin = CapabilityDef(id="notes", name="Notes", category="utility", description="Plans.", build=lambda _c: None,
                         tools=(ToolInfo(id="write_plan", summary="Write."),))
    with pytest.raises(ValueError, match="tool id 'write_plan' is declared by both 'planning' and 'notes'"):
        Registry([*default_registry(), twin])


SEARCHER = CapabilityDef(id="searcher", name="Search", category="research", description="Searches the web.",
                         tools=(ToolInfo(id="site_search", summary="Search the web.", provider_executed=True),
                                ToolInfo(id="open_result", summary="Open one result.")),
                         build=lambda _context: None)
"""A capability whose search the model provider runs: no approval gate can hold it."""


class TranslatorConfig(BaseModel):
    service: Literal["free", "paid"] = "free"


TRANSLATOR = CapabilityDef(id="translator", name="Translate", category="utility", description="Translates.",
                           tools=(), config=TranslatorConfig, build=lambda _context: None,
                           key=KeyRequirement(description="a paid-tier API key",
                                              when=lambda config: config.service == "paid"))
"""A capability that needs a key only for some config values."""

class RunnerConfig(BaseModel):
    where: Literal["here", "provider"] = "here"


RUNNER = CapabilityDef(id="runner", name="Run", category="analysis", description="Runs code.", config=RunnerConfig,
                       tools=(ToolInfo(id="run_snippet", summary="Run a snippet."),), build=lambda _context: None,
                       at_provider=lambda config: ["run_snippet"] if config.where == "provider" else [])
"""A capability whose tool the model provider runs only under some configs."""

SEAM_CASES = [
    Case(id="approval-on-a-tool-this-config-has-the-provider-run",
         capabilities=[{"id": "runner", "config": {"where": "provider"}, "approval": "required"}],
         problem="agents[0].capabilities[0].approval: with this config, 'run_snippet' runs at the model provider, "
                 "where no approval can stop it; choose a config under which this deployment runs it itself, or "
                 "drop the approval requirement"),
    Case(id="binding-gate-on-a-tool-the-bound-agents-config-has-the-provider-run",
         capabilities=[{"id": "runner", "config": {"where": "provider"}}],
         binding={"approvals": {"tool_approval": {"run_snippet": "required"}}},
         problem="bots[0].binding.approvals.tool_approval.run_snippet: with this config, 'run_snippet' runs at the "
                 "model provider, where no approval can stop it; choose a config under which this deployment runs "
                 "it itself, or drop the approval requirement"),
    Case(id="required-approval-on-a-provider-tool",
         capabilities=[{"id": "searcher", "tool_approval": {"site_search": "required"}}],
         problem="agents[0].capabilities[0].tool_approval.site_search: 'site_search' runs at the model provider, where "
                 "no approval can stop it; remove the requirement, or leave the tool out"),
    Case(id="whole-entry-approval-reaching-a-provider-tool", capabilities=[{"id": "searcher", "approval": "required"}],
         problem="agents[0].capabilities[0].approval: 'site_search' runs at the model provider, where no approval can "
                 "stop it; remove the requirement, or leave the tool out"),
    Case(id="binding-approval-on-a-provider-tool", capabilities=["searcher"],
         binding={"approvals": {"tool_approval": {"site_search": "required"}}},
         problem="bots[0].binding.approvals.tool_approval.site_search: 'site_search' runs at the model provider, where "
                 "no approval can stop it; remove the requirement, or leave the tool out"),
    Case(id="key-for-the-config-that-needs-one", capabilities=[{"id": "translator", "config": {"service": "paid"}}],
         problem="agents[0].capabilities[0].secret_id: 'translator' needs a key (a paid-tier API key); name the "
                 "secret that holds it"),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in SEAM_CASES])
def test_what_a_capability_declares_about_gates_and_keys_is_enforced(case: Case) -> None:
    registry = default_registry().with_extra(SEARCHER, TRANSLATOR, RUNNER)
    assert apply_problems(config(case.capabilities, binding=case.binding), registry) == [case.problem]


def test_a_provider_tool_left_ungated_and_a_key_the_config_does_not_need_are_accepted() -> None:
    registry = default_registry().with_extra(SEARCHER, TRANSLATOR)
    spec = [{"id": "searcher", "approval": "required", "tool_approval": {"site_search": "never"}},
            {"id": "translator", "config": {"service": "free"}}]
    assert apply_problems(config(spec), registry) == []
    gated_here = [{"id": "runner", "config": {"where": "here"}, "approval": "required"}]
    assert apply_problems(config(gated_here), registry.with_extra(RUNNER)) == []


def test_a_provider_tool_declared_side_effecting_is_refused_when_the_registry_is_built() -> None:
    gated = CapabilityDef(id="runner", name="Run", category="analysis", description="Runs code.",
                          build=lambda _c: None,
                          tools=(ToolInfo(id="run_code", summary="Run.", provider_executed=True, side_effecting=True),))
    with pytest.raises(ValueError, match="tool 'run_code' of 'runner' runs at the model provider"):
        Registry([*default_registry(), gated])


def test_gateway_check_refuses_a_spec_the_registry_refuses(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config(["channel_tools"]).model_dump(mode="json")))
    result = CliRunner().invoke(app, ["check", "-c", str(path)])
    assert result.exit_code == 2
    assert "agents['helper'].capabilities[0].id: 'channel_tools' is granted per bot binding" in result.output


def test_an_ungranted_scope_in_the_environment_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_GRANTED_SCOPES", "web:read,agents:delegat")
    result = CliRunner().invoke(app, ["capabilities"])
    assert result.exit_code == 2
    assert "GATEWAY_GRANTED_SCOPES: agents:delegat is not a scope; known: agents:delegate" in result.output
