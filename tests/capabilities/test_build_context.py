"""What a builder is handed at assembly: its own config class, its entry's secret, the run's stores — and
a wiring mistake stops the assembly, naming the capability and what it lacks."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai.capabilities import AbstractCapability, Capability

from capabilities import default_registry
from capabilities.registry import CapabilityDef, Registry
from capabilities.run import BuildContext, ServiceMissing
from gateway.agents.assembly import MissingSecret
from gateway.agents.models import ModelResolver
from gateway.config.secrets import SecretSource
from tests.support.capability_runs import assemble, assembled, binding_with, recording, run_facts


class ProbeConfig(BaseModel):
    greeting: str = "hello"


def probe_registry(seen: list[BuildContext[ProbeConfig]], ended: list[str]) -> Registry:
    """`probe` records the context it was built from, and its run end, as any capability's would be called."""

    def build(context: BuildContext[ProbeConfig]) -> AbstractCapability[Any]:
        seen.append(context)
        return Capability()

    async def on_run_end(context: BuildContext[ProbeConfig]) -> None:
        ended.append(context.config.greeting)

    probe = CapabilityDef(id="probe", name="Probe", category="utility", description="Records its build.",
                          tools=(), config=ProbeConfig, build=build, on_run_end=on_run_end)
    return default_registry().with_extra(probe)


def assembled_probe(entry: dict[str, Any], environ: dict[str, str], seen: list[BuildContext[ProbeConfig]],
                    ended: list[str]) -> Any:
    binding = binding_with([{"id": "probe", **entry}])
    model, _ = recording()
    models = ModelResolver({}, SecretSource(environ={}), fixed={"scripted": model})
    return assemble(binding, registry=probe_registry(seen, ended), models=models, run=run_facts(binding),
                    secrets=SecretSource(environ=environ))


async def test_a_builder_gets_its_own_config_and_its_entrys_secret_and_its_run_end_is_called() -> None:
    seen: list[BuildContext[ProbeConfig]] = []
    ended: list[str] = []
    agent = assembled_probe({"config": {"greeting": "hi"}, "secret_id": "PROBE_KEY"}, {"PROBE_KEY": "s3cret"},
                            seen, ended)
    [context] = seen
    assert isinstance(context.config, ProbeConfig) and context.config.greeting == "hi"
    assert context.secret is not None and context.secret.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(context)
    assert ended == []
    await agent.end_run()
    assert ended == ["hi"]


def test_an_entry_without_a_secret_id_gets_none() -> None:
    seen: list[BuildContext[ProbeConfig]] = []
    assembled_probe({}, {}, seen, [])
    assert seen[0].secret is None


def test_a_secret_the_deployment_does_not_hold_stops_the_assembly() -> None:
    with pytest.raises(MissingSecret, match="'probe' names the secret 'PROBE_KEY'"):
        assembled_probe({"secret_id": "PROBE_KEY"}, {}, [], [])


def test_a_run_wired_without_a_note_store_is_refused_not_left_without_memory() -> None:
    model, _ = recording()
    with pytest.raises(ServiceMissing, match="'memory_files' needs MemoryFilesServices"):
        assembled(binding_with(["memory_files"]), model, notes=None)
