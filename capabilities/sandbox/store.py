"""Where `sandbox` workspaces are kept, and which workspace each `session_scope` means for one run."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from adapters.base import ChatAddress, Speaker
from capabilities.sandbox.facts import (
    SessionScope,
    StoredWorkspace,
)
from storage.db import Database, insert_for
from storage.models import SandboxWorkspaceRow
from storage.tables import utcnow


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
