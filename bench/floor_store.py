"""The durable floor's storage: the least a bot writes to lose no message and keep its history across a restart.

Per message, on SQLAlchemy Core over SQLite (WAL, as the gateway's embedded default), on one worker thread:
the message committed by itself (deduplicated by chat and message id), the chat's last turns read back as the
model's history, then the user's words, the answer and the message's end committed together. No leases, no
identities, no search index, no run rows: what durability alone costs, for the gateway's overhead to be read
against (`bench/floor_answer.py`, `--kind durable`). Only the writes' cost is modelled: the floor does not hold the
platform's acknowledgement back until the message is stored, as the gateway does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    bindparam,
    create_engine,
    event,
    select,
    update,
)
from sqlalchemy.dialects.sqlite import insert

T = TypeVar("T")

METADATA = MetaData()
INBOUND = Table("inbound", METADATA,
                Column("id", Integer, primary_key=True),
                Column("chat", String, nullable=False),
                Column("message_id", String, nullable=False),
                Column("text", Text, nullable=False),
                Column("done", Boolean, nullable=False, default=False),
                Index("inbound_once", "chat", "message_id", unique=True))
TURNS = Table("turns", METADATA,
              Column("id", Integer, primary_key=True),
              Column("chat", String, nullable=False),
              Column("is_user", Boolean, nullable=False),
              Column("text", Text, nullable=False),
              Index("turns_by_chat", "chat", "id"))

_ACCEPT = insert(INBOUND).on_conflict_do_nothing()
_HISTORY = (select(TURNS.c.is_user, TURNS.c.text).where(TURNS.c.chat == bindparam("chat"))
            .order_by(TURNS.c.id.desc()).limit(bindparam("limit")))
_TURN = TURNS.insert()
_DONE = (update(INBOUND).where(INBOUND.c.chat == bindparam("of_chat"), INBOUND.c.message_id == bindparam("of_message"))
         .values(done=True))


class DurableHistory:
    """The chats' turns in a SQLite file; each call is one transaction on the store's own thread."""

    def __init__(self, path: str) -> None:
        self._engine = create_engine(f"sqlite:///{path}")
        event.listen(self._engine, "connect", _wal)
        METADATA.create_all(self._engine)
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="floor-store")

    async def accept(self, chat: str, message_id: str, text: str) -> None:
        """The message, committed by itself before its answer is worked out; a redelivery is dropped here."""
        await self._run(lambda c: c.execute(_ACCEPT, {"chat": chat, "message_id": message_id, "text": text}))

    async def history(self, chat: str, turns: int) -> list[ModelMessage]:
        """The chat's last `turns` exchanges, oldest first, as the model's messages."""
        rows = await self._run(lambda c: c.execute(_HISTORY, {"chat": chat, "limit": 2 * turns}).all())
        return [ModelRequest(parts=[UserPromptPart(text)]) if is_user else ModelResponse(parts=[TextPart(text)])
                for is_user, text in reversed(rows)]

    async def answered(self, chat: str, message_id: str, prompt: str, answer: str) -> None:
        """The user's words, the answer and the message's end, in one transaction."""
        def work(connection: Connection) -> None:
            connection.execute(_TURN, [{"chat": chat, "is_user": True, "text": prompt},
                                       {"chat": chat, "is_user": False, "text": answer}])
            connection.execute(_DONE, {"of_chat": chat, "of_message": message_id})
        await self._run(work)

    async def _run(self, work: Callable[[Connection], T]) -> T:
        def committed() -> T:
            with self._engine.begin() as connection:
                return work(connection)
        return await asyncio.get_running_loop().run_in_executor(self._thread, committed)


def _wal(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute("PRAGMA journal_mode=WAL")
