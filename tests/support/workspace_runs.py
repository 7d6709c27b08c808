"""Runs of an agent bound to `sandbox`, the way the runtime assembles them, for the workspace tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import DeferredToolRequests

from adapters.base import ChatAddress, Speaker
from capabilities import default_registry
from capabilities.run import Upload
from capabilities.sandbox.facts import SandboxConnection, WorkspaceDocuments, WorkspaceFacts
from capabilities.sandbox.store import workspace_keys
from gateway.agents.models import ModelResolver
from gateway.config.secrets import SecretSource
from gateway.pipeline.runtime import TurnDeps
from tests.support.capability_runs import assemble, binding_with, run_facts
from tests.support.scripted import calls_then_answers

ALICE = Speaker(platform="slack", platform_user_id="U1", display_name="Alice")
BOB = Speaker(platform="slack", platform_user_id="U2", display_name="Bob")


def slack(channel: str, thread: str | None = None, *, direct: bool = False) -> ChatAddress:
    return ChatAddress(bot_id="T1", platform="slack", channel_id=channel, thread_id=thread, is_direct=direct)


@dataclass
class Posted:
    """An outbox that keeps what was posted."""

    files: list[tuple[str, bytes, str | None]] = field(default_factory=list)

    async def post_file(self, *, name: str, data: bytes, mime_type: str | None) -> None:
        self.files.append((name, data, mime_type))


@dataclass
class Turn:
    """Where and by whom one run happens."""

    address: ChatAddress = field(default_factory=lambda: slack("C1", "t1"))
    speaker: Speaker = ALICE
    run_id: int = 1
    user_key: str | None = None


async def workspace_turn(config: Mapping[str, Any], calls: Sequence[tuple[str, dict[str, object]]], *,
                         turn: Turn | None = None, documents: WorkspaceDocuments | None = None,
                         connections: Mapping[str, SandboxConnection] | None = None,
                         uploads: Sequence[Upload] = (), skills: Mapping[str, Mapping[str, bytes]] | None = None,
                         outbox: Posted | None = None, max_bytes: int | None = None,
                         approval: Mapping[str, str] | None = None, binding_scope: str | None = None) -> list[str]:
    """One run that makes `calls` in the workspace; returns what each call returned (the run is then ended)."""
    turn = turn or Turn()
    entry: dict[str, Any] = {"id": "sandbox", "config": dict(config)}
    if approval is not None:
        entry["tool_approval"] = dict(approval)
    binding = binding_with([entry])
    connections = dict(connections or {})
    facts = WorkspaceFacts(keys=workspace_keys(turn.address, turn.speaker, run_id=turn.run_id, user_key=turn.user_key),
                           documents=documents, connections=connections,
                           default_connection=next(iter(connections), None), uploads=uploads, skills=skills or {},
                           scope=binding_scope,  # type: ignore[arg-type]
                           **({"state_max_bytes": max_bytes} if max_bytes is not None else {}))
    returned: list[str] = []
    model = calls_then_answers(*calls, answer=lambda results: returned.extend(results) or "done")
    models = ModelResolver({}, SecretSource(environ={}), fixed={"scripted": model})
    agent = assemble(binding, registry=default_registry(), models=models,
                     run=run_facts(binding, address=turn.address, workspace=facts, outbox=outbox))
    result = await agent.agent.run("go", deps=TurnDeps(address=turn.address, speaker=turn.speaker, binding=binding))
    if isinstance(result.output, DeferredToolRequests):
        returned.append("parked: " + ", ".join(call.tool_name for call in result.output.approvals))
    await agent.end_run()
    return returned
