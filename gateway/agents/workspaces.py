"""Where `sandbox` workspaces are kept, and which workspace each `session_scope` means for one run."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from adapters.base import ChatAddress, Speaker
from capabilities.sandbox.facts import (
    DEFAULT_STATE_MAX_BYTES,
    BubblewrapConnection,
    SandboxConnection,
    SandboxServiceConnection,
    SessionScope,
    StoredWorkspace,
)
from gateway.config.schema import BubblewrapSandboxSpec, GatewayConfig, Settings, resolve_secret
from gateway.config.secrets import SecretSource
from storage.db import Database, insert_for
from storage.models import SandboxWorkspaceRow, utcnow


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceWiring:
    """What the deployment gives every run's workspace: the operator's sandbox connections and the `state` cap."""

    connections: Mapping[str, SandboxConnection] = field(default_factory=dict)
    default_connection: str | None = None
    state_max_bytes: int = DEFAULT_STATE_MAX_BYTES


def user_key(*, identity_id: int, person_id: int | None) -> str:
    """One person across platforms when their identities are linked; otherwise this identity."""
    return f"person:{person_id}" if person_id is not None else f"identity:{identity_id}"


def workspace_keys(address: ChatAddress, speaker: Speaker, *, run_id: int,
                   user_key: str | None) -> dict[SessionScope, str]:
    """The catalog's scopes for one run. `conversation` is the chat id with its thread (each Slack thread is a
    chat of its own), `channel` the room without the thread (a DM has its own room), `user` the speaker's
    linked person or identity (their platform id when neither is known), `agent` one workspace for all."""
    return {"run": f"run:{run_id}", "conversation": address.conversation_key, "channel": address.room_key,
            "user": user_key or f"{speaker.platform}:{speaker.platform_user_id}", "agent": "all"}


def _hashed(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _size(files: Mapping[str, Any]) -> int:
    total = 0
    for data in files.values():
        content = "\n".join(data.get("content", []))
        total += len(base64.b64decode(content)) if data.get("encoding") == "base64" else len(content.encode())
    return total


class StoredWorkspaces:
    """The `sandbox_workspaces` rows: one `StateBackend` document per workspace key."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self, key: str) -> StoredWorkspace | None:
        async def work(session: AsyncSession) -> StoredWorkspace | None:
            found = await session.execute(select(SandboxWorkspaceRow).where(
                SandboxWorkspaceRow.workspace_key == _hashed(key)))
            row = found.scalar()
            return None if row is None else StoredWorkspace(files=dict(row.files), directories=tuple(row.directories))
        return await self._db.transaction(work)

    async def save(self, key: str, *, label: str, changed: Mapping[str, Any | None],
                   directories: Sequence[str]) -> None:
        insert = insert_for(self._db.dialect)

        async def work(session: AsyncSession) -> None:
            await session.execute(insert(SandboxWorkspaceRow).values(
                workspace_key=_hashed(key), label=label, files={}, directories=[], size=0,
                updated_at=utcnow()).on_conflict_do_nothing(index_elements=["workspace_key"]))
            found = await session.execute(select(SandboxWorkspaceRow).where(
                SandboxWorkspaceRow.workspace_key == _hashed(key)).with_for_update())
            row = found.scalar_one()
            files = {**row.files, **{path: data for path, data in changed.items() if data is not None}}
            files = {path: data for path, data in files.items() if changed.get(path, data) is not None}
            row.files, row.directories = files, sorted(set(directories))
            row.size, row.updated_at = _size(files), utcnow()
        await self._db.transaction(work)

    async def delete(self, key: str) -> None:
        async def work(session: AsyncSession) -> None:
            await session.execute(delete(SandboxWorkspaceRow).where(SandboxWorkspaceRow.workspace_key == _hashed(key)))
        await self._db.transaction(work)


def build_workspace_wiring(config: GatewayConfig, settings: Settings, secrets: SecretSource, *,
                           register: Callable[[str], None] | None = None) -> WorkspaceWiring:
    """The operator's `sandboxes` as connections, each service token resolved (and handed to `register`, the
    log redactor, so it never reaches a log line)."""
    connections: dict[str, SandboxConnection] = {}
    for name, spec in config.sandboxes.items():
        if isinstance(spec, BubblewrapSandboxSpec):
            connections[name] = BubblewrapConnection(name=name, root=spec.directory, network=spec.network)
            continue
        token = resolve_secret(spec.token, secrets, field=f"sandboxes.{name}.token")
        if register is not None:
            register(token.get_secret_value())
        connections[name] = SandboxServiceConnection(name=name, url=spec.url, token=token,
                                                     runtimes=tuple(spec.runtimes))
    return WorkspaceWiring(connections=connections, default_connection=config.default_sandbox(),
                           state_max_bytes=settings.sandbox_state_max_bytes)
