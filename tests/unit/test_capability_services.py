"""Capabilities bind their services once, when the gateway starts: only those the config uses, each from the
deployment, and a service one cannot have fails the start naming the capability and the field."""

from __future__ import annotations

from typing import Any

import pytest

from capabilities import default_registry
from capabilities.memory_files.services import MemoryFilesServices
from capabilities.registry import CapabilityDef, ToolInfo
from capabilities.run import Deployment, ServiceMissing
from capabilities.sandbox.services import SandboxServices
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource

SANDBOXD = {"kind": "sandboxd", "url": "http://sandboxd.internal:8080", "token": "${SANDBOXD_TOKEN}"}


def config(*capabilities: str, sandboxes: dict[str, Any] | None = None,
           channel_tools: dict[str, Any] | None = None) -> GatewayConfig:
    binding = {"channel_tools": channel_tools} if channel_tools is not None else {}
    return GatewayConfig.model_validate({
        "agents": [{"name": "a", "model": "m", "capabilities": list(capabilities)}],
        "bots": [{"name": "b", "platform": "telegram", "token": "${T}", "agent": "a", "binding": binding}],
        "sandboxes": sandboxes or {}})


def deployment(config: GatewayConfig, **environ: str) -> Deployment:
    redacted: list[str] = []
    return Deployment(db=object(), config=config, settings=Settings.model_validate({}),
                      secrets=SecretSource(environ=environ), redact=redacted.append)


def test_only_what_the_config_uses_is_bound() -> None:
    registry = default_registry()
    used = config("memory_files", "planning", channel_tools={"tools": ["get_channel_info"]})
    assert registry.used_by(used) == {"memory_files", "planning", "channel_tools"}
    bound = registry.bind(deployment(used), registry.used_by(used))
    assert isinstance(bound.services("memory_files"), MemoryFilesServices)
    assert bound.services("sandbox") is None and bound.services("knowledge") is None


def test_a_service_the_deployment_cannot_give_fails_the_bind_naming_capability_and_field() -> None:
    used = config("sandbox", sandboxes={"docker": SANDBOXD})
    with pytest.raises(ServiceMissing) as refused:
        default_registry().bind(deployment(used), {"sandbox"})
    assert refused.value.capability == "sandbox" and "sandboxes.docker.token" in str(refused.value)


def test_a_bound_token_goes_to_the_log_redactor_and_into_the_services() -> None:
    used = config("sandbox", sandboxes={"docker": SANDBOXD})
    redacted: list[str] = []
    bound = default_registry().bind(Deployment(db=object(), config=used, settings=Settings.model_validate({}),
                                               secrets=SecretSource(environ={"SANDBOXD_TOKEN": "t0ken"}),
                                               redact=redacted.append), {"sandbox"})
    services = bound.services("sandbox")
    assert isinstance(services, SandboxServices) and "docker" in services.wiring.connections
    assert redacted == ["t0ken"]


def test_each_capability_binds_once_however_many_runs_follow() -> None:
    binds: list[Deployment] = []

    def bind(deployment: Deployment) -> str:
        binds.append(deployment)
        return "services"

    counted = CapabilityDef(id="counted", name="Counted", category="utility", description="Counts its binds.",
                            tools=(ToolInfo(id="noop", summary="Does nothing."),), build=lambda _context: None,
                            bind=bind)
    registry = default_registry().with_extra(counted)
    bound = registry.bind(deployment(config()), ["counted", "counted"])
    assert [bound.services("counted") for _ in range(3)] == ["services"] * 3 and len(binds) == 1
