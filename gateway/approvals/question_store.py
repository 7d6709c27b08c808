"""Delegate question rows: asked with a parked run, answered or expired by compare-and-swap."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, bindparam, exists, insert, select, update

from adapters.base import Speaker
from storage.db import Database
from storage.tables import DELEGATE_QUESTIONS as QUESTIONS
from storage.tables import utcnow


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    id: int
    parked_run_id: int
    conversation_key: str
    tool_call_id: str
    """The parked call the answer resumes."""
    specialist: str
    question: str
    choices: tuple[str, ...]
    """The options offered, in order; a click answers with one of them."""
    requester_id: str
    requester_name: str
    status: str
    """pending → answered | expired."""
    answer: str | None
    answered_by: str | None
    expires_at: datetime
    message_id: str | None
    """The chat message that asked (with the buttons, when it offered choices)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NewQuestion:
    tool_call_id: str
    specialist: str
    question: str
    choices: tuple[str, ...] = ()


class DelegateQuestions:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, *, parked_run_id: int, conversation_key: str, questions: Sequence[NewQuestion],
                  requester: Speaker, expires_at: datetime) -> list[Question]:
        """One pending question per parked call, put to the person whose run it is."""
        values = [{"parked_run_id": parked_run_id, "conversation_key": conversation_key,
                   "tool_call_id": new.tool_call_id, "specialist": new.specialist, "question": new.question,
                   "choices": list(new.choices) or None, "requester_id": requester.platform_user_id,
                   "requester_name": requester.display_name, "status": "pending", "expires_at": expires_at}
                  for new in questions]
        if not values:
            return []

        def work(connection: Connection) -> list[Question]:
            rows = connection.execute(insert(QUESTIONS).returning(QUESTIONS, sort_by_parameter_order=True), values)
            return [_question(row) for row in rows]
        return await self._db.run(work)

    async def attach_message(self, question_id: int, message_id: str) -> None:
        def work(connection: Connection) -> None:
            connection.execute(update(QUESTIONS).where(QUESTIONS.c.id == question_id).values(message_id=message_id))
        await self._db.run(work, single=True)

    async def get(self, question_id: int) -> Question | None:
        def work(connection: Connection) -> Question | None:
            row = connection.execute(select(QUESTIONS).where(QUESTIONS.c.id == question_id)).first()
            return _question(row) if row is not None else None
        return await self._db.run(work, single=True)

    async def pending(self, conversation_key: str, requester_id: str) -> Question | None:
        """The oldest open question this person is asked in this conversation."""
        return await self._db.run(lambda connection: pending_question(connection, conversation_key, requester_id))

    async def answer(self, question_id: int, text: str, speaker: Speaker, message_id: str) -> Question | None:
        """Compare-and-swap a pending question to `answered`, keeping the answer and the message that gave it;
        None when it was answered or expired already."""
        def work(connection: Connection) -> Question | None:
            now = utcnow()
            row = connection.execute(
                update(QUESTIONS).where(QUESTIONS.c.id == question_id, QUESTIONS.c.status == "pending",
                                        QUESTIONS.c.expires_at > now)
                .values(status="answered", answer=text, answer_message_id=message_id,
                        answered_by=speaker.display_name, answered_at=now)
                .returning(QUESTIONS)).one_or_none()
            return _question(row) if row is not None else None
        return await self._db.run(work, single=True)

    async def answered_with(self, conversation_key: str, message_id: str) -> Question | None:
        """The question a given message already answered (an inbox item retried after a crash)."""
        return await self._db.run(lambda connection: answered_question(connection, conversation_key, message_id))

    async def expire_due(self) -> list[Question]:
        """Compare-and-swap every question nobody answered in time to `expired`."""
        def work(connection: Connection) -> list[Question]:
            result = connection.execute(
                update(QUESTIONS).where(QUESTIONS.c.status == "pending", QUESTIONS.c.expires_at <= utcnow())
                .values(status="expired", answered_at=utcnow()).returning(QUESTIONS))
            return [_question(row) for row in result]
        return await self._db.run(work, single=True)

    async def of_run(self, parked_run_id: int) -> list[Question]:
        def work(connection: Connection) -> list[Question]:
            rows = connection.execute(select(QUESTIONS).where(QUESTIONS.c.parked_run_id == parked_run_id))
            return [_question(row) for row in rows]
        return await self._db.run(work, single=True)


def _question(row: Row[Any]) -> Question:
    """From a Core row of the table."""
    return Question(id=row.id, parked_run_id=row.parked_run_id, conversation_key=row.conversation_key,
                    tool_call_id=row.tool_call_id, specialist=row.specialist, question=row.question,
                    choices=tuple(str(choice) for choice in row.choices or ()), requester_id=row.requester_id,
                    requester_name=row.requester_name, status=row.status, answer=row.answer,
                    answered_by=row.answered_by, expires_at=row.expires_at, message_id=row.message_id)


_PENDING = (select(QUESTIONS).where(QUESTIONS.c.conversation_key == bindparam("key"),
                                    QUESTIONS.c.requester_id == bindparam("requester"),
                                    QUESTIONS.c.status == "pending", QUESTIONS.c.expires_at > bindparam("now"))
            .order_by(QUESTIONS.c.created_at, QUESTIONS.c.id).limit(1))
_ANSWERED = select(QUESTIONS).where(QUESTIONS.c.conversation_key == bindparam("key"),
                                   QUESTIONS.c.answer_message_id == bindparam("message_id"),
                                   QUESTIONS.c.status == "answered").limit(1)
"""Asked before every turn (`QuestionFlow.may_take`): Core statements built once, rows read as plain tuples."""


def open_question(parked_run_id: int) -> ColumnElement[bool]:
    """True while a question of this parked run waits for its answer: a condition for the statement that asks."""
    return exists().where(QUESTIONS.c.parked_run_id == parked_run_id, QUESTIONS.c.status == "pending")


def pending_question(connection: Connection, conversation_key: str, requester_id: str) -> Question | None:
    """`DelegateQuestions.pending` in the caller's transaction."""
    row = connection.execute(_PENDING, {"key": conversation_key, "requester": requester_id, "now": utcnow()}).first()
    return _question(row) if row is not None else None


def answered_question(connection: Connection, conversation_key: str, message_id: str) -> Question | None:
    """`DelegateQuestions.answered_with` in the caller's transaction."""
    row = connection.execute(_ANSWERED, {"key": conversation_key, "message_id": message_id}).first()
    return _question(row) if row is not None else None
