"""What applying a config refuses for `web_research` and `web_fetch` (every refusal of the catalog, by its field),
the conditional key, the approval gate that could never fire (refused at check and again at assembly), and what
the deployment keeps of a key: the builder gets it, `gateway check` says when it is unset, no log line shows it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from capabilities import default_registry
from gateway.agents.assembly import MissingSecret, UngatableTool
from gateway.checks.report import check_file
from gateway.checks.validation import apply_problems, deployment_registry
from gateway.cli.main import app
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.pipeline.runtime import failure_notice
from tests.capabilities.test_web_fetch import fetched
from tests.support.capability_runs import assembled, binding_with
from tests.support.fakes.pages import FakePages
from tests.support.scripted import answers

AT = "agents[0].capabilities[0]"
NATIVE_SEARCH = ("with this config, 'web_search' runs at the model provider, where no approval can stop it; choose a "
                 "config under which this deployment runs it itself, or drop the approval requirement")
NATIVE_FETCH = NATIVE_SEARCH.replace("'web_search'", "'web_fetch'")


def config(capabilities: list[Any], *, binding: dict[str, Any] | None = None) -> GatewayConfig:
    bot = {"name": "tg", "platform": "telegram", "token": "${TOKEN}", "agent": "helper", "binding": binding or {}}
    return GatewayConfig.model_validate({"agents": [{"name": "helper", "model": "openai-chat:gpt-4o-mini",
                                                     "capabilities": capabilities}], "bots": [bot]})


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    entry: dict[str, Any]
    binding: dict[str, Any] = field(default_factory=dict)
    problem: str


def web_fetch(**config_: Any) -> dict[str, Any]:
    return {"id": "web_fetch", "config": config_}


REFUSED = [
    Case(id="fetch-wildcard", entry=web_fetch(allowed_domains=["example.com", "*.example.com"]),
         problem=f"{AT}.config.allowed_domains[1]: '*.example.com' is a wildcard, and entries match one hostname "
                 "exactly; list each host (example.com, www.example.com)"),
    Case(id="fetch-scheme", entry=web_fetch(blocked_domains=["https://evil.example"]),
         problem=f"{AT}.config.blocked_domains[0]: 'https://evil.example' has a scheme; write the bare hostname, "
                 "without http:// or https://"),
    Case(id="fetch-path", entry=web_fetch(allowed_domains=["example.com/docs"]),
         problem=f"{AT}.config.allowed_domains[0]: 'example.com/docs' has a path; entries are bare hostnames and "
                 "match whole sites"),
    Case(id="fetch-port", entry=web_fetch(allowed_domains=["example.com:8443"]),
         problem=f"{AT}.config.allowed_domains[0]: 'example.com:8443' has a port (or is an IPv6 address); write the "
                 "bare hostname, which matches every port"),
    Case(id="fetch-empty-allowlist", entry=web_fetch(allowed_domains=[]),
         problem=f"{AT}.config.allowed_domains: an empty allowlist refuses every site; list the hostnames the agent "
                 "may read, or remove allowed_domains to allow any"),
    Case(id="fetch-length-below-range", entry=web_fetch(max_content_chars=999),
         problem=f"{AT}.config.max_content_chars: Input should be greater than or equal to 1000 (got 999)"),
    Case(id="fetch-length-above-range", entry=web_fetch(max_content_chars=200_001),
         problem=f"{AT}.config.max_content_chars: Input should be less than or equal to 200000 (got 200001)"),
    Case(id="fetch-native-with-approval", entry={**web_fetch(method="native"), "approval": "required"},
         problem=f"{AT}.approval: {NATIVE_FETCH}"),
    Case(id="fetch-auto-with-tool-approval",
         entry={**web_fetch(method="auto"), "tool_approval": {"web_fetch": "required"}},
         problem=f"{AT}.tool_approval.web_fetch: {NATIVE_FETCH}"),
    Case(id="search-results-below-range", entry={"id": "web_research", "config": {"max_results": 0}},
         problem=f"{AT}.config.max_results: Input should be greater than or equal to 1 (got 0)"),
    Case(id="search-results-above-range", entry={"id": "web_research", "config": {"max_results": 11}},
         problem=f"{AT}.config.max_results: Input should be less than or equal to 10 (got 11)"),
    Case(id="search-paid-without-key", entry={"id": "web_research", "config": {"method": "exa"}},
         problem=f"{AT}.secret_id: 'web_research' needs a key (an API key for Tavily, Brave or Exa; only methods "
                 "tavily, brave and exa need one); name the secret that holds it"),
    Case(id="search-native-with-tool-approval",
         entry={"id": "web_research", "config": {"method": "native"}, "tool_approval": {"web_search": "required"}},
         problem=f"{AT}.tool_approval.web_search: {NATIVE_SEARCH}"),
    Case(id="search-native-with-binding-approval", entry={"id": "web_research", "config": {"method": "native"}},
         binding={"approvals": {"tool_approval": {"web_search": "required"}}},
         problem=f"bots[0].binding.approvals.tool_approval.web_search: {NATIVE_SEARCH}"),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in REFUSED])
def test_a_config_that_breaks_a_rule_is_refused_naming_its_field_and_the_fix(case: Case) -> None:
    assert apply_problems(config([case.entry], binding=case.binding), default_registry()) == [case.problem]


@pytest.mark.parametrize("entry", [
    pytest.param({"id": "web_research"}, id="duckduckgo-needs-no-key"),
    pytest.param({"id": "web_research", "config": {"method": "native"}}, id="native-needs-no-key"),
    pytest.param({"id": "web_research", "config": {"method": "tavily"}, "secret_id": "TAVILY_API_KEY"},
                 id="paid-with-key"),
    pytest.param({"id": "web_research", "approval": "required"}, id="search-run-here-may-be-gated"),
    pytest.param({**web_fetch(), "approval": "required"}, id="local-fetch-may-be-gated"),
    pytest.param({**web_fetch(method="native"), "approval": "required", "tool_approval": {"web_fetch": "never"}},
                 id="native-fetch-explicitly-ungated"),
    pytest.param(web_fetch(blocked_domains=[]), id="empty-denylist"),
])
def test_a_config_within_the_rules_is_accepted(entry: dict[str, Any]) -> None:
    assert apply_problems(config([entry]), default_registry()) == []


def test_a_binding_gate_on_a_search_this_deployment_runs_is_accepted() -> None:
    problems = apply_problems(config([{"id": "web_research"}],
                                     binding={"approvals": {"tool_approval": {"web_search": "required"}}}),
                              default_registry())
    assert problems == []


@pytest.mark.parametrize(("entry", "binding"), [
    pytest.param({"id": "web_research", "config": {"method": "native"}, "approval": "required"}, {}, id="search"),
    pytest.param({**web_fetch(method="auto"), "tool_approval": {"web_fetch": "required"}}, {}, id="fetch-auto"),
    pytest.param(web_fetch(method="native"), {"approvals": {"tool_approval": {"web_fetch": "required"}}},
                 id="fetch-native-binding-gate"),
])
def test_a_stored_spec_asking_for_an_ungatable_approval_is_refused_again_when_assembled(
        entry: dict[str, Any], binding: dict[str, Any]) -> None:
    """Nothing re-validates a frozen version, so assembly checks it again: the agent stops, the tool never runs
    ungated, and the chat is told it is a configuration problem."""
    with pytest.raises(UngatableTool, match="runs at the model provider") as refused:
        assembled(binding_with([entry], binding=binding), answers("hi"))
    assert "configuration problem" in failure_notice(refused.value)


def test_hosts_are_applied_in_their_one_dns_spelling(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    entry = web_fetch(allowed_domains=["Exämple.COM.", "docs.python.org"], blocked_domains=[])
    path.write_text(yaml.safe_dump(config([entry]).model_dump(mode="json"), allow_unicode=True))
    report = check_file(path, registry=default_registry(), secrets=SecretSource(environ={"TOKEN": "t"}))
    assert report.errors == () and report.config is not None
    stored = report.config.agents[0].capabilities[0].config
    assert stored == {"allowed_domains": ["xn--exmple-cua.com", "docs.python.org"], "blocked_domains": None}


def test_gateway_check_names_an_unset_key_and_the_development_switch(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "gateway.yaml"
    entries = [{"id": "web_research", "config": {"method": "brave"}, "secret_id": "${BRAVE_API_KEY}"}, web_fetch()]
    path.write_text(yaml.safe_dump(config(entries).model_dump(mode="json")))
    monkeypatch.setenv("TOKEN", "123:abc")
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    monkeypatch.setenv("GATEWAY_DEV_WEB_FETCH_ALLOW_LOCAL", "true")
    result = CliRunner().invoke(app, ["check", "-c", str(path)])
    assert result.exit_code == 0, result.output
    assert ("warning: agents['helper'].capabilities[0].secret_id: BRAVE_API_KEY is not set in the environment or "
            "the secrets file") in result.output
    assert "GATEWAY_DEV_WEB_FETCH_ALLOW_LOCAL is set: web_fetch reads private, loopback" in result.output


@pytest.mark.parametrize(("value", "reached"), [(None, False), ("true", True)])
async def test_only_the_development_switch_lets_a_deployment_fetch_a_loopback_page(
        value: str | None, reached: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if value is None:
        monkeypatch.delenv("GATEWAY_DEV_WEB_FETCH_ALLOW_LOCAL", raising=False)
    else:
        monkeypatch.setenv("GATEWAY_DEV_WEB_FETCH_ALLOW_LOCAL", value)
    async with FakePages() as pages:
        [answer] = await fetched(f"{pages.url}/page", registry=deployment_registry(Settings()))
    assert (answer.outcome != "retried") is reached and bool(pages.requested) is reached


def test_a_key_named_either_way_reaches_the_builder() -> None:
    for secret_id in ("SEARCH_KEY", "${SEARCH_KEY}"):
        entry = {"id": "web_research", "config": {"method": "brave"}, "secret_id": secret_id}
        try:
            assembled(binding_with([entry]), answers("hi"), secrets={"SEARCH_KEY": "brave-key-123456"})
        except MissingSecret as exc:  # the assembly resolves every entry's key before the agent exists
            pytest.fail(f"secret_id {secret_id!r} did not resolve: {exc}")


def test_a_key_the_deployment_lacks_stops_the_assembly_naming_the_variable() -> None:
    entry = {"id": "web_research", "config": {"method": "tavily"}, "secret_id": "TAVILY_API_KEY"}
    with pytest.raises(MissingSecret, match="names the secret 'TAVILY_API_KEY'") as missing:
        assembled(binding_with([entry]), answers("hi"), secrets={})
    assert "configuration problem" in failure_notice(missing.value)


def test_gateway_check_refuses_a_native_fetch_behind_an_approval_at_its_line(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config([{**web_fetch(method="auto"), "approval": "required"}]).model_dump(
        mode="json")))
    monkeypatch.setenv("TOKEN", "123:abc")
    result = CliRunner().invoke(app, ["check", "-c", str(path)])
    assert result.exit_code == 2
    assert f"agents['helper'].capabilities[0].approval: {NATIVE_FETCH}" in result.output
