"""`browser_use`: config validation (cdp_url only in remote, SSRF-checked), the missing-engine path, and the
loopback engine seam with every step booked on the run."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import DeferredToolRequests

from capabilities import default_registry
from capabilities.browser_use.engine import INSTALL_LINE, BrowserEngine, HttpBrowserEngine
from gateway.agents.models import ModelResolver
from gateway.checks.browsing import browser_problems
from gateway.config.schema import CapabilityEntry, GatewayConfig
from gateway.config.secrets import SecretSource
from tests.support.capability_runs import assemble, binding_with, deps_for, run_facts
from tests.support.fakes.browser_engine import running_browser_engine
from tests.support.scripted import calls_then_answers


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    config: dict[str, Any]
    problem: str


REFUSED = [
    Case(id="cdp-url-in-playwright", config={"cdp_url": "wss://browser.example.com"}, problem="only valid in mode"),
    Case(id="remote-without-cdp-url", config={"mode": "remote"}, problem="needs cdp_url"),
    Case(id="loopback", config={"mode": "remote", "cdp_url": "ws://127.0.0.1:9222"}, problem="loopback, private"),
    Case(id="private", config={"mode": "remote", "cdp_url": "ws://10.1.2.3:9222"}, problem="loopback, private"),
    Case(id="metadata", config={"mode": "remote", "cdp_url": "http://169.254.169.254/"}, problem="loopback, private"),
    Case(id="localhost", config={"mode": "remote", "cdp_url": "ws://localhost:9222"}, problem="this machine"),
    Case(id="ipv6-loopback", config={"mode": "remote", "cdp_url": "ws://[::1]:9222"}, problem="loopback, private"),
    Case(id="siit-loopback", config={"mode": "remote", "cdp_url": "ws://[::ffff:0:7f00:1]:9222"},
         problem="loopback, private"),
    Case(id="nat64-private", config={"mode": "remote", "cdp_url": "ws://[64:ff9b::a00:1]:9222"},
         problem="loopback, private"),
    Case(id="decimal-loopback", config={"mode": "remote", "cdp_url": "ws://2130706433:9222"},
         problem="loopback, private"),
    Case(id="credentials", config={"mode": "remote", "cdp_url": "wss://u:p@browser.example.com"},
         problem="credentials"),
    Case(id="headless-in-remote", config={"mode": "remote", "cdp_url": "wss://browser.example.com",
                                          "headless": False}, problem="playwright' only"),
    Case(id="too-many-steps", config={"max_steps": 101}, problem="max_steps"),
    Case(id="bad-domain", config={"allowed_domains": ["exa mple.com"]}, problem="not a domain"),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in REFUSED])
def test_a_bad_browser_config_is_refused_naming_the_field(case: Case) -> None:
    entry = CapabilityEntry(id="browser_use", config=case.config)
    problems = default_registry().validate_entry(entry, path="agents[0].capabilities[0]")
    assert any(p.startswith("agents[0].capabilities[0].config") and case.problem in p for p in problems), problems


def test_a_remote_browser_with_a_public_address_and_globbed_domains_is_accepted() -> None:
    entry = CapabilityEntry(id="browser_use", config={"mode": "remote", "cdp_url": "wss://browser.example.com",
                                                      "allowed_domains": ["*.example.com", "example.org"]})
    assert default_registry().validate_entry(entry, path="agents[0].capabilities[0]") == []


def remote_config(cdp_url: str) -> GatewayConfig:
    return GatewayConfig.model_validate({
        "agents": [{"name": "a", "model": "m", "capabilities": [
            {"id": "browser_use", "config": {"mode": "remote", "cdp_url": cdp_url}}]}],
        "bots": [{"name": "b", "platform": "telegram", "token": "${T}", "agent": "a"}]})


def test_a_cdp_name_that_resolves_to_a_private_address_is_refused_when_the_config_is_checked() -> None:
    problems = browser_problems(remote_config("wss://browser.corp.example"), resolver=lambda _host: ["10.0.0.5"])
    assert problems and problems[0].startswith("agents[0].capabilities[0].config.cdp_url") and "10.0.0.5" in problems[0]


def test_a_cdp_name_that_resolves_to_a_public_address_passes_the_check() -> None:
    assert browser_problems(remote_config("wss://browser.example.com"), resolver=lambda _host: ["93.184.216.34"]) == []


async def browse(task: str, *, engine: BrowserEngine | None, config: dict[str, Any] | None = None,
                 gated: bool = False) -> tuple[list[str], Any]:
    binding = binding_with([{"id": "browser_use", "config": config or {},
                             **({} if gated else {"tool_approval": {"browse_web": "never"}})}])
    returned: list[str] = []
    model = calls_then_answers(("browse_web", {"task": task}), answer=lambda r: returned.extend(r) or "done")
    models = ModelResolver({}, SecretSource(environ={}), fixed={"scripted": model})
    agent = assemble(binding, registry=default_registry(), models=models,
                     run=run_facts(binding, browser=engine))
    result = await agent.agent.run("go", deps=deps_for(binding))
    return returned, result


async def test_without_an_engine_the_tool_fails_loudly_with_the_install_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        [answer], _ = await browse("find the price", engine=None)
    assert "not available" in answer and INSTALL_LINE in answer
    assert any(INSTALL_LINE in record.getMessage() for record in caplog.records)


async def test_the_task_reaches_the_engine_with_the_authors_limits_and_each_step_is_booked() -> None:
    async with running_browser_engine() as engine:
        [answer], result = await browse("find the price", engine=HttpBrowserEngine(url=engine.url),
                                        config={"allowed_domains": ["*.example.com"], "max_steps": 5,
                                                "use_vision": False})
    [task] = engine.tasks
    assert task["task"] == "find the price" and task["allowed_domains"] == ["*.example.com"]
    assert task["max_steps"] == 5 and task["use_vision"] is False and task["cdp_url"] is None
    assert "12 EUR" in answer and "untrusted" in answer and 'steps="3"' in answer
    assert result.usage.requests == 2 + 3  # the agent's own two requests, and the engine's three steps


async def test_an_engine_failure_comes_back_as_text() -> None:
    async with running_browser_engine() as engine:
        engine.status = 500
        [answer], _ = await browse("find the price", engine=HttpBrowserEngine(url=engine.url))
    assert "could not do this" in answer and "Chromium crashed" in answer


async def test_browse_web_asks_before_it_runs() -> None:
    async with running_browser_engine() as engine:
        _, result = await browse("buy it", engine=HttpBrowserEngine(url=engine.url), gated=True)
    assert isinstance(result.output, DeferredToolRequests) and engine.tasks == []
