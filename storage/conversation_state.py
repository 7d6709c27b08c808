"""What a capability keeps with a conversation between its turns: one JSON object per capability."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, select

from storage.db import Database, insert_for
from storage.tables import CONVERSATION_STATE, utcnow

_STATE = CONVERSATION_STATE.c
_LOAD = select(_STATE.data).where(_STATE.conversation_key == bindparam("conversation_key"),
                                  _STATE.capability == bindparam("capability"))
"""Read by the capabilities that keep state, on their turns: built once."""


class StoredConversationState:
    """The `conversation_state` rows of one conversation (a plan, reminder counters)."""

    def __init__(self, db: Database, conversation_key: str) -> None:
        self._db = db
        self.conversation_key = conversation_key

    async def load(self, capability: str) -> dict[str, Any] | None:
        def work(connection: Connection) -> dict[str, Any] | None:
            return connection.execute(_LOAD, {"conversation_key": self.conversation_key,
                                              "capability": capability}).scalar()
        return await self._db.run(work, single=True)

    async def save(self, capability: str, data: dict[str, Any]) -> None:
        insert = insert_for(self._db.dialect)

        def work(connection: Connection) -> None:
            now = utcnow()
            statement = insert(CONVERSATION_STATE).values(conversation_key=self.conversation_key,
                                                          capability=capability, data=data, updated_at=now)
            connection.execute(statement.on_conflict_do_update(
                index_elements=["conversation_key", "capability"], set_={"data": data, "updated_at": now}))
        await self._db.run(work, single=True)
