"""Conversations, speakers and their turns; history is read from the newest end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from sqlalchemy import Row, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from adapters.base import ChatAddress, HistoryItem, Inbound, Speaker
from storage.db import Database, insert_for
from storage.models import ConversationRow, IdentityRow, MessageRow, utcnow


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRecord:
    """The stored user turn that admitted a run, and the rows it belongs to."""

    conversation_id: int
    identity_id: int
    person_id: int | None
    """The person the speaker's identity is linked to, if any."""
    message_id: int
    first_turn: bool
    """Nothing was said in this conversation before this turn."""


class Conversations:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record_user_turn(self, inbound: Inbound) -> TurnRecord:
        """Store the speaker, the conversation and the user's words once, even when a turn is retried.

        Core statements, each row looked up before it is inserted: a known conversation and speaker cost one
        SELECT each (the common case), not an INSERT that conflicts and a SELECT after it."""
        async def work(session: AsyncSession) -> TurnRecord:
            conversation_id = await self._conversation(session, inbound.address)
            identity_id, person_id = await self._speaker(session, inbound.speaker)
            existing = (await session.execute(
                select(MessageRow.id).where(MessageRow.conversation_id == conversation_id,
                                            MessageRow.role == "user",
                                            MessageRow.platform_message_id == inbound.message_id))).scalar()
            if existing is None:
                existing = (await session.execute(insert(MessageRow).values(
                    conversation_id=conversation_id, role="user", identity_id=identity_id,
                    speaker_name=inbound.speaker.display_name, text=inbound.text,
                    platform_message_id=inbound.message_id, created_at=utcnow()).returning(MessageRow.id))).scalar_one()
            earlier = (await session.execute(
                select(MessageRow.id).where(MessageRow.conversation_id == conversation_id,
                                            MessageRow.id < existing).limit(1))).scalar()
            return TurnRecord(conversation_id=conversation_id, identity_id=identity_id,
                              person_id=person_id, message_id=existing, first_turn=earlier is None)
        return await self._db.transaction(work)

    async def identity(self, speaker: Speaker) -> int:
        """Store the speaker (handle and name kept fresh) without recording anything they said."""
        async def work(session: AsyncSession) -> int:
            return (await self._speaker(session, speaker))[0]
        return await self._db.transaction(work)

    async def answered_in(self, conversation_key: str) -> bool:
        """True once the bot has taken part in this conversation (a thread it was addressed in)."""
        async def work(session: AsyncSession) -> bool:
            found = await session.execute(select(ConversationRow.id).where(ConversationRow.key == conversation_key))
            return found.scalar() is not None
        return await self._db.transaction(work)

    async def record_answer(self, conversation_id: int, *, run_id: int, text: str, speaker_name: str,
                            platform_message_id: str | None) -> None:
        async def work(session: AsyncSession) -> None:
            await session.execute(insert(MessageRow).values(
                conversation_id=conversation_id, role="assistant", identity_id=None, speaker_name=speaker_name,
                text=text, run_id=run_id, platform_message_id=platform_message_id, created_at=utcnow()))
        await self._db.transaction(work)

    async def history(self, turn: TurnRecord, *, limit: int, name_speakers: bool) -> list[ModelMessage]:
        """The `limit` most recent turns before this one, oldest first, as pydantic-ai messages."""
        if limit <= 0:
            return []

        async def work(session: AsyncSession) -> list[Row[Any]]:
            rows = (await session.execute(
                select(MessageRow.role, MessageRow.text, MessageRow.speaker_name, MessageRow.created_at)
                .where(MessageRow.conversation_id == turn.conversation_id, MessageRow.id < turn.message_id)
                .order_by(MessageRow.id.desc()).limit(limit))).all()
            return list(reversed(rows))
        return [_as_model_message(row, name_speakers) for row in await self._db.transaction(work)]

    async def _conversation(self, session: AsyncSession, address: ChatAddress) -> int:
        where = ConversationRow.key == address.conversation_key
        found = (await session.execute(select(ConversationRow.id).where(where))).scalar()
        if found is not None:
            return int(found)
        values = {"key": address.conversation_key, "bot_name": address.bot_id, "platform": address.platform,
                  "channel_id": address.channel_id, "thread_id": address.thread_id,
                  "is_direct": address.is_direct, "created_at": utcnow()}
        return await _get_or_insert(session, ConversationRow, values, ["key"], where)

    async def _speaker(self, session: AsyncSession, speaker: Speaker) -> tuple[int, int | None]:
        """The speaker's identity id and linked person, stored on first sight; handle and name kept fresh."""
        where = ((IdentityRow.platform == speaker.platform) & (IdentityRow.workspace == speaker.workspace)
                 & (IdentityRow.platform_user_id == speaker.platform_user_id))
        row = (await session.execute(select(IdentityRow.id, IdentityRow.person_id, IdentityRow.handle,
                                            IdentityRow.display_name).where(where))).first()
        if row is None:
            values = {"platform": speaker.platform, "workspace": speaker.workspace,
                      "platform_user_id": speaker.platform_user_id, "handle": speaker.handle,
                      "display_name": speaker.display_name, "is_bot": speaker.is_bot, "updated_at": utcnow()}
            identity_id = await _get_or_insert(session, IdentityRow, values,
                                               ["platform", "workspace", "platform_user_id"], where)
            person_id = (await session.execute(select(IdentityRow.person_id)
                                               .where(IdentityRow.id == identity_id))).scalar()
            return identity_id, person_id
        if (row.handle, row.display_name) != (speaker.handle, speaker.display_name):
            await session.execute(update(IdentityRow).where(IdentityRow.id == row.id).values(
                handle=speaker.handle, display_name=speaker.display_name, updated_at=utcnow()))
        return int(row.id), row.person_id


async def _get_or_insert(session: AsyncSession, table: type, values: dict, keys: list[str], where: object) -> int:
    insert = insert_for(session.bind.dialect.name)
    inserted = (await session.execute(insert(table).values(**values)
                                      .on_conflict_do_nothing(index_elements=keys)
                                      .returning(table.id))).scalar()
    if inserted is not None:
        return int(inserted)
    return int((await session.execute(select(table.id).where(where))).scalar_one())


def _as_model_message(row: Row[Any], name_speakers: bool) -> ModelMessage:
    if row.role == "assistant":
        return ModelResponse(parts=[TextPart(row.text)], timestamp=row.created_at)
    return ModelRequest(parts=[UserPromptPart(speaker_line(row.speaker_name, row.text, name_speakers),
                                              timestamp=row.created_at)])


def thread_context(items: list[HistoryItem], *, before: str) -> list[ModelMessage]:
    """What was said in the thread before the bot was first addressed there, framed as information."""
    lines = [speaker_line(item.speaker.display_name, " ".join(item.text.split()), True)
             for item in items if item.message_id != before]
    if not lines:
        return []
    text = "Earlier in this thread, before you were mentioned (for context only):\n" + "\n".join(lines)
    return [ModelRequest(parts=[UserPromptPart(text)])]


def speaker_line(name: str, text: str, name_speakers: bool) -> str:
    """In a group the model must tell speakers apart, so each user turn carries its speaker's name."""
    return f"[{name}] {text}" if name_speakers else text
