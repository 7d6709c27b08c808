"""Where `sandbox` workspaces are kept, and which workspace each `session_scope` means for one run."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, delete, select, update

from adapters.base import ChatAddress, Speaker
from capabilities.sandbox.facts import (
    SessionScope,
    StoredWorkspace,
)
from storage.db import Database, insert_for
from storage.tables import SANDBOX_WORKSPACES, utcnow

_WORKSPACE = SANDBOX_WORKSPACES.c


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
        def work(connection: Connection) -> StoredWorkspace | None:
            row = connection.execute(select(_WORKSPACE.files, _WORKSPACE.directories)
                                     .where(_WORKSPACE.workspace_key == _hashed(key))).first()
            return None if row is None else StoredWorkspace(files=dict(row.files), directories=tuple(row.directories))
        return await self._db.run(work, single=True)

    async def save(self, key: str, *, label: str, changed: Mapping[str, Any | None],
                   directories: Sequence[str]) -> None:
        insert = insert_for(self._db.dialect)

        def work(connection: Connection) -> None:
            # The row exists first, so that two savers of one workspace queue on its lock and merge in turn.
            connection.execute(insert(SANDBOX_WORKSPACES).values(
                workspace_key=_hashed(key), label=label, files={}, directories=[], size=0,
                updated_at=utcnow()).on_conflict_do_nothing(index_elements=["workspace_key"]))
            stored: dict[str, Any] = connection.execute(select(_WORKSPACE.files).where(
                _WORKSPACE.workspace_key == _hashed(key)).with_for_update()).scalar_one()
            files = {**stored, **{path: data for path, data in changed.items() if data is not None}}
            files = {path: data for path, data in files.items() if changed.get(path, data) is not None}
            connection.execute(update(SANDBOX_WORKSPACES).where(_WORKSPACE.workspace_key == _hashed(key)).values(
                files=files, directories=sorted(set(directories)), size=_size(files), updated_at=utcnow()))
        await self._db.run(work)

    async def delete(self, key: str) -> None:
        def work(connection: Connection) -> None:
            connection.execute(delete(SANDBOX_WORKSPACES).where(_WORKSPACE.workspace_key == _hashed(key)))
        await self._db.run(work, single=True)
