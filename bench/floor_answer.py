"""What every floor bot does between its placeholder and its edit: echo the tag, or one streamed agent run."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from pydantic_ai import Agent, ModelMessage

from bench.models import instant_model

if TYPE_CHECKING:
    from bench.floor_store import DurableHistory

HISTORY_TURNS = 50
"""`agents[].history_turns`' default: the window the gateway sends the model."""
PLACEHOLDER = "…"


class Answerer:
    """`echo`: `answer <tag>` at once. `llm`: one `run_stream` with the chat's history, kept in memory and cut to
    the gateway's default window. `durable`: the same run, with the message stored first and the history kept in
    `database` (`bench/floor_store.py`)."""

    def __init__(self, kind: str, database: str | None = None) -> None:
        self._kind = kind
        self._agent = Agent(instant_model(), instructions="Answer briefly.")
        self._histories: dict[str, list[ModelMessage]] = {}
        self._store: DurableHistory | None = None
        if kind == "durable":
            if not database:
                raise SystemExit("--kind durable needs --database")
            # SQLAlchemy loads only here: the other floors carry no database library in their memory
            self._store = importlib.import_module("bench.floor_store").DurableHistory(database)

    async def answer(self, chat: str, message_id: str, text: str) -> str:
        if self._kind == "echo":
            return f"answer {text.split()[-1]}"
        if self._store is not None:
            return await self._durably(chat, message_id, text)
        async with self._agent.run_stream(text, message_history=self._histories.get(chat, [])) as run:
            final = await run.get_output()
        self._histories[chat] = run.all_messages()[-2 * HISTORY_TURNS:]
        return final

    async def _durably(self, chat: str, message_id: str, text: str) -> str:
        assert self._store is not None
        await self._store.accept(chat, message_id, text)
        history = await self._store.history(chat, HISTORY_TURNS)
        async with self._agent.run_stream(text, message_history=history) as run:
            final = await run.get_output()
        await self._store.answered(chat, message_id, text, final)
        return final
