"""What every floor bot does between its placeholder and its edit: echo the tag, or one streamed agent run."""

from __future__ import annotations

from pydantic_ai import Agent, ModelMessage

from bench.models import instant_model

HISTORY_TURNS = 50
"""`agents[].history_turns`' default: the window the gateway sends the model."""
PLACEHOLDER = "…"


class Answerer:
    """`echo`: `answer <tag>` at once. `llm`: one `run_stream` with the chat's history, kept in memory and cut to
    the gateway's default window."""

    def __init__(self, kind: str) -> None:
        self._kind = kind
        self._agent = Agent(instant_model(), instructions="Answer briefly.")
        self._histories: dict[str, list[ModelMessage]] = {}

    async def answer(self, chat: str, text: str) -> str:
        if self._kind == "echo":
            return f"answer {text.split()[-1]}"
        async with self._agent.run_stream(text, message_history=self._histories.get(chat, [])) as run:
            final = await run.get_output()
        self._histories[chat] = run.all_messages()[-2 * HISTORY_TURNS:]
        return final
