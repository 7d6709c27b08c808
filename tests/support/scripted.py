"""Scripted pydantic-ai models, named for what they do."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

Reply = Callable[[list[ModelMessage], AgentInfo], str]


def scripted(reply: Reply, *, chunk: int = 40) -> FunctionModel:
    """A model whose answer is `reply(messages, info)`, streamed in chunks of `chunk` characters."""

    def complete(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(reply(messages, info))])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        text = reply(messages, info)
        for start in range(0, len(text), chunk):
            yield text[start:start + chunk]

    return FunctionModel(complete, stream_function=stream)


def answers(text: str) -> FunctionModel:
    return scripted(lambda _messages, _info: text)


def echoes() -> FunctionModel:
    """Answers `echo: <the last user prompt>`."""
    return scripted(lambda messages, _info: f"echo: {last_prompt(messages)}")


def fails(error: Exception) -> FunctionModel:
    def boom(_messages: list[ModelMessage], _info: AgentInfo) -> str:
        raise error
    return scripted(boom)


def waits_for(gate: asyncio.Event, text: str, *, started: asyncio.Event | None = None) -> FunctionModel:
    """Streams a first chunk, then holds until `gate` is set (a long model call); sets `started` when asked."""

    async def stream(_messages: list[ModelMessage], _info: AgentInfo) -> AsyncIterator[str]:
        if started is not None:
            started.set()
        yield "thinking "
        await gate.wait()
        yield text

    def complete(_messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        raise AssertionError("this model only streams")

    return FunctionModel(complete, stream_function=stream)


def last_prompt(messages: list[ModelMessage]) -> str:
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    return " ".join(str(p.content) for p in request.parts if isinstance(p, UserPromptPart))


def user_prompts(messages: list[ModelMessage]) -> list[str]:
    return [str(p.content) for m in messages if isinstance(m, ModelRequest)
            for p in m.parts if isinstance(p, UserPromptPart)]


def calls_then_answers(*calls: tuple[str, dict[str, object]],
                       answer: Callable[[list[str]], str] | None = None) -> FunctionModel:
    """Calls the tools in order, one per model request, then answers with what the last call returned
    (or with `answer(every result)`)."""

    def step(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
        returned = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts
                    if isinstance(p, ToolReturnPart)]
        if len(returned) < len(calls):
            name, args = calls[len(returned)]
            return name, args, f"call-{len(returned) + 1}"
        if answer is not None:
            return answer([str(p.content) for p in returned])
        return f"done: {returned[-1].content}"

    return stepped(step)


Step = Callable[[list[ModelMessage]], "tuple[str, dict[str, object], str] | str"]
InfoStep = Callable[[list[ModelMessage], AgentInfo], "tuple[str, dict[str, object], str] | str"]


def stepped(step: Step) -> FunctionModel:
    """A model that does what `step(messages)` decides: a tool call `(name, args, call id)`, or a text answer."""
    return stepped_with_info(lambda messages, _info: step(messages))


def stepped_with_info(step: InfoStep) -> FunctionModel:
    """`stepped`, for a `step` that also reads what the agent offers (`AgentInfo`: instructions, tools)."""

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        decision = step(messages, info)
        if isinstance(decision, str):
            yield decision
            return
        name, args, call_id = decision
        yield {0: DeltaToolCall(name=name, json_args=json.dumps(args), tool_call_id=call_id)}

    def complete(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        decision = step(messages, info)
        if isinstance(decision, str):
            return ModelResponse(parts=[TextPart(decision)])
        name, args, call_id = decision
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=call_id)])

    return FunctionModel(complete, stream_function=stream)


def priced_as(model: FunctionModel, model_name: str) -> FunctionModel:
    """`model`'s script under a model name genai-prices knows (`gpt-4o`): its responses carry that name, so
    pydantic-ai prices them as a hosted model's are."""
    if model.function is None or model.stream_function is None:
        raise ValueError("priced_as takes a model that both completes and streams, as `scripted` makes them")
    return FunctionModel(model.function, stream_function=model.stream_function, model_name=model_name)
