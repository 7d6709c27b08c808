"""A delegate the workspace is lent to works in the same files as the agent, within the run."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic_ai.models.function import FunctionModel

from capabilities import default_registry
from capabilities.sandbox.facts import WorkspaceFacts
from capabilities.sandbox.store import StoredWorkspaces, workspace_keys
from gateway.agents.bindings import AgentDefinition
from gateway.agents.models import ModelResolver
from gateway.config.schema import AgentSpec
from gateway.config.secrets import SecretSource
from storage.db import Database
from tests.capabilities.test_subagents import RESEARCHER, lead
from tests.support.capability_runs import ALICE, ROOM, assemble, deps_for, run_facts
from tests.support.scripted import calls_then_answers

WRITE = ("write_file", {"path": "notes.md", "content": "the lead's finding"})


def reads_then_reports() -> FunctionModel:
    return calls_then_answers(("read_file", {"path": "notes.md"}), answer=lambda results: f"read: {results[-1]}")


async def delegated(db: Database, config: dict[str, Any], task: dict[str, str], *,
                    agents: dict[str, Any] | None = None) -> str:
    binding = lead(config, pinned=tuple(agents or ()), capabilities=({"id": "sandbox"},))
    specs = {name: AgentSpec.model_validate({"name": name, **spec}) for name, spec in (agents or {}).items()}
    binding = replace(binding, agent=replace(binding.agent, pins={name: 1 for name in specs}),
                      delegate_versions={(n, 1): AgentDefinition(name=n, version=1, spec=s) for n, s in specs.items()})
    answers: list[str] = []
    parent = calls_then_answers(WRITE, ("task", task), answer=lambda results: answers.append(results[-1]) or "ok")
    models = ModelResolver({}, SecretSource(environ={}), fixed={"parent": parent, "child": reads_then_reports()})
    facts = WorkspaceFacts(keys=workspace_keys(ROOM, ALICE, run_id=1, user_key=None), documents=StoredWorkspaces(db))
    agent = assemble(binding, registry=default_registry(), models=models,
                     run=run_facts(binding, workspace=facts))
    await agent.agent.run("go", deps=deps_for(binding))
    return answers[-1]


async def test_a_specialist_lent_the_workspace_reads_what_the_agent_just_wrote(db: Database) -> None:
    answer = await delegated(db, {"inline": [RESEARCHER], "share_with_delegates": ["sandbox"]},
                             {"description": "read the notes", "subagent_type": "researcher"})
    assert "the lead's finding" in answer
