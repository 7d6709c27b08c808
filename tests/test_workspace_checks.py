"""`gateway check` refuses a `service` workspace with nowhere to run, naming the field and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from capabilities import default_registry
from gateway.checks.workspaces import sandbox_problems
from gateway.config.schema import CapabilityEntry, GatewayConfig

SANDBOXD = {"kind": "sandboxd", "url": "http://sandboxd.internal:8080", "token": "${SANDBOXD_TOKEN}",
            "runtimes": ["python"]}


def config(entry: dict[str, Any], sandboxes: dict[str, Any] | None = None) -> GatewayConfig:
    return GatewayConfig.model_validate({
        "agents": [{"name": "a", "model": "m", "capabilities": [{"id": "sandbox", "config": entry}]}],
        "bots": [{"name": "b", "platform": "telegram", "token": "${T}", "agent": "a"}],
        "sandboxes": sandboxes or {}})


@pytest.mark.parametrize(("entry", "sandboxes", "expected"), [
    pytest.param({"backend": "service"}, {}, "config.backend: 'service' needs a sandbox connection", id="none"),
    pytest.param({"backend": "service", "connection_id": "gpu"}, {"docker": SANDBOXD},
                 "config.connection_id: 'gpu' is not one of the sandboxes (docker)", id="unknown"),
    pytest.param({"backend": "service"}, {"one": SANDBOXD, "two": SANDBOXD}, "none is marked default", id="no-default"),
    pytest.param({"backend": "service", "runtime": "node"}, {"docker": SANDBOXD},
                 "config.runtime: 'node' is not a runtime sandbox 'docker' allows (python)", id="runtime"),
])
def test_a_service_workspace_without_a_usable_connection_is_refused(entry: dict[str, Any], sandboxes: dict[str, Any],
                                                                    expected: str) -> None:
    [problem] = sandbox_problems(config(entry, sandboxes))
    assert problem.startswith("agents[0].capabilities[0].config") and expected in problem


def test_the_only_connection_or_the_marked_one_is_the_default() -> None:
    assert sandbox_problems(config({"backend": "service"}, {"docker": SANDBOXD})) == []
    marked = {"one": SANDBOXD, "two": {**SANDBOXD, "default": True}}
    assert config({}, marked).default_sandbox() == "two"
    assert sandbox_problems(config({"backend": "service"}, marked)) == []


def test_connection_id_and_runtime_belong_to_the_service_backend_only() -> None:
    entry = CapabilityEntry(id="sandbox", config={"connection_id": "docker"})
    [problem] = default_registry().validate_entry(entry, path="agents[0].capabilities[0]")
    assert "backend 'service' only" in problem


def test_a_bubblewrap_connection_on_a_host_without_bubblewrap_is_refused_with_the_install_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    local = {"kind": "bubblewrap", "directory": str(tmp_path)}
    [problem] = sandbox_problems(config({"backend": "service"}, {"local": local}))
    assert problem.startswith("sandboxes.local.kind") and "apt-get install -y bubblewrap" in problem
