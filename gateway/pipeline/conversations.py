"""Conversations, speakers and their turns; history is read from the newest end."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from sqlalchemy import Connection, Row, bindparam, delete, func, insert, select, update

from adapters.base import ChatAddress, HistoryItem, Inbound, Speaker
from storage.db import Database, insert_for
from storage.tables import CONVERSATIONS, IDENTITIES, MESSAGES, utcnow


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
        """Store the speaker, the conversation and the user's words once, even when a turn is retried."""
        return await self._db.run(lambda connection: start_turn(connection, inbound, retried=True, limit=0,
                                                                name_speakers=False)[0])

    async def identity(self, speaker: Speaker) -> int:
        """Store the speaker (handle and name kept fresh) without recording anything they said."""
        return await self._db.run(lambda connection: _speaker(connection, speaker)[0])

    async def answered_in(self, conversation_key: str) -> bool:
        """True once the bot has taken part in this conversation (a thread it was addressed in)."""
        def work(connection: Connection) -> bool:
            return connection.execute(_CONVERSATION, {"key": conversation_key}).scalar() is not None
        return await self._db.run(work, single=True)


# The turn's statements, on the tables' columns (Core: no ORM unit of work), built once; each runs in its caller's
# transaction (`Database.run`), which the router composes into the turn's start and end.
_CONVERSATION = select(CONVERSATIONS.c.id).where(CONVERSATIONS.c.key == bindparam("key"))
_IDENTITY_WHERE = ((IDENTITIES.c.platform == bindparam("platform")) & (IDENTITIES.c.workspace == bindparam("workspace"))
                   & (IDENTITIES.c.platform_user_id == bindparam("user_id")))
_IDENTITY = select(IDENTITIES.c.id, IDENTITIES.c.person_id, IDENTITIES.c.handle,
                   IDENTITIES.c.display_name).where(_IDENTITY_WHERE)
_USER_TURN = select(MESSAGES.c.id).where(MESSAGES.c.conversation_id == bindparam("conversation_id"),
                                         MESSAGES.c.role == "user",
                                         MESSAGES.c.platform_message_id == bindparam("message_id"))
_ADD_MESSAGE = insert(MESSAGES).returning(MESSAGES.c.id)
_ADD_ANSWER = insert(MESSAGES)
_EARLIER = select(MESSAGES.c.id).where(MESSAGES.c.conversation_id == bindparam("conversation_id"),
                                       MESSAGES.c.id < bindparam("id")).limit(1)
_HISTORY_FROM = func.coalesce(select(CONVERSATIONS.c.history_from)
                              .where(CONVERSATIONS.c.id == bindparam("conversation_id")).scalar_subquery(), 0)
"""Where the conversation's history starts: after `new`, its newest turns only."""
_HISTORY = (select(MESSAGES.c.role, MESSAGES.c.text, MESSAGES.c.speaker_name, MESSAGES.c.created_at)
            .where(MESSAGES.c.conversation_id == bindparam("conversation_id"), MESSAGES.c.id < bindparam("id"),
                   MESSAGES.c.id >= _HISTORY_FROM)
            .order_by(MESSAGES.c.id.desc()).limit(bindparam("limit")))


def start_turn(connection: Connection, inbound: Inbound, *, retried: bool, limit: int,
               name_speakers: bool) -> tuple[TurnRecord, list[ModelMessage]]:
    """Store the speaker, the conversation and the user's words once, and read the `limit` turns before them, oldest
    first, as pydantic-ai messages. Each row is looked up before it is inserted (a known conversation and speaker
    cost one SELECT each); a first attempt cannot have stored the user's words already (`retried`: an earlier
    attempt may have), and a history that reads any turn answers whether anything was said before this one."""
    conversation_id, identity_id, person_id, message_id = _user_turn(connection, inbound, retried=retried)
    record = TurnRecord(conversation_id=conversation_id, identity_id=identity_id, person_id=person_id,
                        message_id=message_id, first_turn=True)
    if limit <= 0:
        earlier = connection.execute(_EARLIER, {"conversation_id": conversation_id, "id": message_id}).scalar()
        return replace(record, first_turn=earlier is None), []
    rows = connection.execute(_HISTORY, {"conversation_id": conversation_id, "id": message_id, "limit": limit}).all()
    return (replace(record, first_turn=not rows),
            [_as_model_message(row, name_speakers) for row in reversed(rows)])


def _user_turn(connection: Connection, inbound: Inbound, *, retried: bool) -> tuple[int, int, int | None, int]:
    """(conversation, identity, linked person, message) ids of the user's turn, stored if it is not yet."""
    conversation_id = _conversation(connection, inbound.address)
    identity_id, person_id = _speaker(connection, inbound.speaker)
    existing = connection.execute(_USER_TURN, {"conversation_id": conversation_id,
                                               "message_id": inbound.message_id}).scalar() if retried else None
    if existing is None:
        existing = connection.execute(_ADD_MESSAGE, {
            "conversation_id": conversation_id, "role": "user", "identity_id": identity_id,
            "speaker_name": inbound.speaker.display_name, "text": inbound.text,
            "platform_message_id": inbound.message_id, "created_at": utcnow()}).scalar_one()
    return conversation_id, identity_id, person_id, int(existing)


@dataclass(frozen=True, slots=True, kw_only=True)
class LastTurn:
    """A person's last turn in a conversation and the answer it got, as `retry` runs it again."""

    text: str
    message_id: str
    """The platform's id of the person's message."""
    answer_row: int | None
    """The stored answer's row, which the new answer replaces; None: the turn has no answer stored."""
    answer_message_id: str | None
    """The platform's id of the answer's message, edited by the new answer where there is one."""


_IN_CONVERSATION = (MESSAGES.c.conversation_id == CONVERSATIONS.c.id) & (CONVERSATIONS.c.key == bindparam("key"))
_LAST_TURN = (select(MESSAGES.c.id, MESSAGES.c.conversation_id, MESSAGES.c.text, MESSAGES.c.platform_message_id)
              .join(IDENTITIES, IDENTITIES.c.id == MESSAGES.c.identity_id)
              .where(_IN_CONVERSATION, MESSAGES.c.role == "user", _IDENTITY_WHERE,
                     MESSAGES.c.id >= func.coalesce(CONVERSATIONS.c.history_from, 0))
              .order_by(MESSAGES.c.id.desc()).limit(1))
_ANSWER_AFTER = (select(MESSAGES.c.id, MESSAGES.c.role, MESSAGES.c.platform_message_id)
                 .where(MESSAGES.c.conversation_id == bindparam("conversation_id"), MESSAGES.c.id > bindparam("id"))
                 .order_by(MESSAGES.c.id).limit(1))
_HISTORY_TEXT = (select(func.count(), func.coalesce(func.sum(func.length(MESSAGES.c.text)), 0))
                 .where(MESSAGES.c.conversation_id == bindparam("conversation_id"), MESSAGES.c.id >= _HISTORY_FROM,
                        MESSAGES.c.id.in_(select(MESSAGES.c.id).where(
                            MESSAGES.c.conversation_id == bindparam("conversation_id"))
                            .order_by(MESSAGES.c.id.desc()).limit(bindparam("limit")))))


def start_afresh(connection: Connection, address: ChatAddress) -> bool:
    """`new`: the conversation's history starts after every turn stored so far. False: nothing was said yet."""
    conversation = connection.execute(_CONVERSATION, {"key": address.conversation_key}).scalar()
    if conversation is None:
        return False
    newest = connection.execute(select(func.max(MESSAGES.c.id)).where(MESSAGES.c.conversation_id == conversation)
                                ).scalar()
    connection.execute(update(CONVERSATIONS).where(CONVERSATIONS.c.id == conversation)
                       .values(history_from=(newest or 0) + 1))
    return newest is not None


def last_turn(connection: Connection, address: ChatAddress, speaker: Speaker) -> LastTurn | None:
    """The speaker's newest turn since the history's start, with the answer stored right after it (turns of one
    conversation run one at a time, so the row after a turn is its answer, if it has one)."""
    row = connection.execute(_LAST_TURN, {"key": address.conversation_key, "platform": speaker.platform,
                                          "workspace": speaker.workspace, "user_id": speaker.platform_user_id}).first()
    if row is None or row.platform_message_id is None:
        return None
    after = connection.execute(_ANSWER_AFTER, {"conversation_id": row.conversation_id, "id": row.id}).first()
    answer = after if after is not None and after.role == "assistant" else None
    return LastTurn(text=row.text, message_id=row.platform_message_id,
                    answer_row=answer.id if answer is not None else None,
                    answer_message_id=answer.platform_message_id if answer is not None else None)


def forget_answer(connection: Connection, row_id: int) -> None:
    """An answer another answer replaced (`retry`) leaves the history."""
    connection.execute(delete(MESSAGES).where(MESSAGES.c.id == row_id))


def history_size(connection: Connection, address: ChatAddress, *, limit: int) -> tuple[int, int]:
    """(turns, characters) of the history the conversation's next turn would read."""
    conversation = connection.execute(_CONVERSATION, {"key": address.conversation_key}).scalar()
    if conversation is None or limit <= 0:
        return 0, 0
    turns, characters = connection.execute(_HISTORY_TEXT, {"conversation_id": conversation, "limit": limit}).one()
    return int(turns), int(characters)


def record_answer(connection: Connection, conversation_id: int, *, run_id: int | None, text: str, speaker_name: str,
                  platform_message_id: str | None) -> None:
    connection.execute(_ADD_ANSWER, {
        "conversation_id": conversation_id, "role": "assistant", "identity_id": None, "speaker_name": speaker_name,
        "text": text, "run_id": run_id, "platform_message_id": platform_message_id, "created_at": utcnow()})


def record_post(connection: Connection, address: ChatAddress, *, text: str, speaker_name: str,
                platform_message_id: str | None) -> None:
    """A post no turn led to (a reminder's text, a schedule's): the bot's words in the conversation's history, so
    the next turn's model knows it was said."""
    record_answer(connection, _conversation(connection, address), run_id=None, text=text, speaker_name=speaker_name,
                  platform_message_id=platform_message_id)


def _conversation(connection: Connection, address: ChatAddress) -> int:
    found = connection.execute(_CONVERSATION, {"key": address.conversation_key}).scalar()
    if found is not None:
        return int(found)
    values = {"key": address.conversation_key, "bot_name": address.bot_id, "platform": address.platform,
              "channel_id": address.channel_id, "thread_id": address.thread_id,
              "is_direct": address.is_direct, "created_at": utcnow()}
    return _get_or_insert(connection, CONVERSATIONS, values, ["key"], _CONVERSATION, {"key": address.conversation_key})


def _speaker(connection: Connection, speaker: Speaker) -> tuple[int, int | None]:
    """The speaker's identity id and linked person, stored on first sight; handle and name kept fresh."""
    who = {"platform": speaker.platform, "workspace": speaker.workspace, "user_id": speaker.platform_user_id}
    row = connection.execute(_IDENTITY, who).first()
    if row is None:
        values = {"platform": speaker.platform, "workspace": speaker.workspace,
                  "platform_user_id": speaker.platform_user_id, "handle": speaker.handle,
                  "display_name": speaker.display_name, "is_bot": speaker.is_bot, "updated_at": utcnow()}
        _get_or_insert(connection, IDENTITIES, values, ["platform", "workspace", "platform_user_id"], _IDENTITY, who)
        row = connection.execute(_IDENTITY, who).one()
        return int(row.id), row.person_id
    if (row.handle, row.display_name) != (speaker.handle, speaker.display_name):
        connection.execute(update(IDENTITIES).where(IDENTITIES.c.id == row.id).values(
            handle=speaker.handle, display_name=speaker.display_name, updated_at=utcnow()))
    return int(row.id), row.person_id


def _get_or_insert(connection: Connection, table: Any, values: dict[str, Any], keys: list[str], lookup: Any,
                   params: dict[str, Any]) -> int:
    insert = insert_for(connection.dialect.name)
    inserted = connection.execute(insert(table).values(**values).on_conflict_do_nothing(index_elements=keys)
                               .returning(table.c.id)).scalar()
    if inserted is not None:
        return int(inserted)
    return int(connection.execute(lookup, params).scalar_one())


def _as_model_message(row: Row[Any, Any, Any, Any], name_speakers: bool) -> ModelMessage:
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
