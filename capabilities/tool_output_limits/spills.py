"""Where `tool_output_limits` keeps a run's oversized tool returns: durably, so a parked run's handles still read
after its resume on any replica."""

from __future__ import annotations

import base64
import hashlib

from sqlalchemy import Connection, delete, select

from storage.conversation_state import StoredConversationState
from storage.db import Database
from storage.tables import CONVERSATION_STATE


class RunSpills:
    """The `tool_output_limits` spills of one run, durably: one `conversation_state` row per spill under the
    run's own key, so a handle in a parked run's history still reads after the resume on any replica, and
    nothing is copied into the parked-run snapshot (a spill is large; the snapshot is read on every resume).

    `discard` deletes them all when the run ends (`tool_output_limits`' `on_run_end`); a park keeps them."""

    def __init__(self, db: Database, run_id: int) -> None:
        self._db = db
        self.key = f"run:{run_id}:tool_output"

    @staticmethod
    def _slot(handle: str) -> str:
        """Handles embed pydantic-ai's run id and the call id, which can outgrow the 64-character column."""
        return "spill:" + hashlib.sha256(handle.encode()).hexdigest()[:40]

    async def write(self, key: str, data: bytes) -> str:
        try:
            text = data.decode()
            payload = {"handle": key, "text": text} if "\x00" not in text else None
        except UnicodeDecodeError:
            payload = None
        payload = payload or {"handle": key, "base64": base64.b64encode(data).decode()}
        await StoredConversationState(self._db, self.key).save(self._slot(key), payload)
        return key

    async def read(self, handle: str) -> bytes:
        found = await StoredConversationState(self._db, self.key).load(self._slot(handle))
        if found is None or found.get("handle") != handle:
            raise FileNotFoundError(handle)
        return found["text"].encode() if "text" in found else base64.b64decode(found["base64"])

    async def handles(self) -> list[str]:
        def work(connection: Connection) -> list[str]:
            found = connection.execute(select(CONVERSATION_STATE.c.data).where(
                CONVERSATION_STATE.c.conversation_key == self.key))
            return sorted(data["handle"] for data in found.scalars())
        return await self._db.run(work, single=True)

    async def discard(self) -> None:
        def work(connection: Connection) -> None:
            connection.execute(delete(CONVERSATION_STATE).where(CONVERSATION_STATE.c.conversation_key == self.key))
        await self._db.run(work, single=True)
