"""What a capability keeps with a conversation between its turns: one JSON object per capability."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database, insert_for
from storage.models import ConversationStateRow
from storage.tables import utcnow


class StoredConversationState:
    """The `conversation_state` rows of one conversation (a plan, reminder counters)."""

    def __init__(self, db: Database, conversation_key: str) -> None:
        self._db = db
        self.conversation_key = conversation_key

    async def load(self, capability: str) -> dict[str, Any] | None:
        async def work(session: AsyncSession) -> dict[str, Any] | None:
            found = await session.execute(select(ConversationStateRow.data).where(
                ConversationStateRow.conversation_key == self.conversation_key,
                ConversationStateRow.capability == capability))
            return found.scalar()
        return await self._db.transaction(work)

    async def save(self, capability: str, data: dict[str, Any]) -> None:
        insert = insert_for(self._db.dialect)

        async def work(session: AsyncSession) -> None:
            statement = insert(ConversationStateRow).values(conversation_key=self.conversation_key,
                                                            capability=capability, data=data, updated_at=utcnow())
            await session.execute(statement.on_conflict_do_update(
                index_elements=["conversation_key", "capability"], set_={"data": data, "updated_at": utcnow()}))
        await self._db.transaction(work)
