"""The scripted model every bench bot uses: answers `answer <tag>` at once, streamed."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

TAG = re.compile(r"\bq-\d{6}\b")


def instant_model() -> FunctionModel:
    """Answers `answer <tag>` for the tag in the newest user prompt, in two streamed chunks, without waiting."""

    def reply(messages: list[ModelMessage]) -> str:
        request = messages[-1]
        parts = request.parts if isinstance(request, ModelRequest) else []
        found = TAG.search(" ".join(str(p.content) for p in parts if isinstance(p, UserPromptPart)))
        return f"answer {found.group(0) if found else '?'}"

    def complete(messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(reply(messages))])

    async def stream(messages: list[ModelMessage], _info: AgentInfo) -> AsyncIterator[str]:
        text = reply(messages)
        yield text[:7]
        yield text[7:]

    return FunctionModel(complete, stream_function=stream)
