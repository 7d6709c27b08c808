"""Questions a synchronous delegate puts to the person: parked with the run, answered in the chat."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeGuard

from pydantic_ai import CallDeferred, DeferredToolRequests, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition

from capabilities.registry import MAX_CHOICE_CHARS, MAX_CHOICES, NOBODY_ANSWERED, AskedQuestion, offered_choices

ASK_PARENT = "ask_parent"
"""The library's tool a synchronous delegate asks the parent agent's person with."""
NOT_ASKED = ("This question was not put to the person: ask one question at a time, and only once no other call "
             "of yours is waiting for a decision.")
NOT_RUN_HERE = "This call cannot be completed from here; continue without it."
CHOICES_PARAMETER = {
    "type": "array", "items": {"type": "string", "maxLength": MAX_CHOICE_CHARS}, "maxItems": MAX_CHOICES,
    "description": "When the person should pick one of a few short options, the options: they are shown as buttons "
                   "and the answer is the option picked (or the person's own words). Leave out for an open question."}


@dataclass
class OffersChoices(AbstractCapability[Any]):
    """Gives the library's `ask_parent` a `choices` argument. The library's tool takes the question alone, so the
    options are read from the deferred call's own arguments (`suspension_state`) and left out before its
    validation; who answers and where stay the gateway's."""

    async def prepare_tools(self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return [_with_choices(tool) if tool.name == ASK_PARENT else tool for tool in tool_defs]

    async def before_tool_validate(self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition,
                                   args: Any) -> Any:
        if call.tool_name != ASK_PARENT:
            return args
        if isinstance(args, str):
            try:
                args = json.loads(args or "{}")
            except ValueError:
                return args  # the library's validation says what is wrong with it
        if isinstance(args, dict):
            return {key: value for key, value in args.items() if key != "choices"}  # pyright: ignore[reportUnknownVariableType]
        return args


def _with_choices(tool: ToolDefinition) -> ToolDefinition:
    schema = dict(tool.parameters_json_schema)
    schema["properties"] = {**schema.get("properties", {}), "choices": CHOICES_PARAMETER}
    return replace(tool, parameters_json_schema=schema)


def choices_of(args: dict[str, Any]) -> list[str]:
    """The options a call to `ask_parent` offered (`offered_choices`)."""
    return offered_choices(args.get("choices"))


async def ask_in_chat(question: str) -> str:
    """The gateway's `ask_user`: a delegate's question parks the whole run rather than blocking it.

    The deferred `ask_parent` call ends the delegate's run with it in `DeferredToolRequests.calls`; the
    delegation tool then parks the parent's `task` call with the question, and the chat asks the person.
    """
    raise CallDeferred(metadata={"question": question})


def asked(metadata: Any) -> AskedQuestion | None:
    """The delegate's question when a parked call waits on one to the person, looking through nested delegations;
    None for an approval or anything else."""
    found = _asked(metadata)
    return None if found is None else replace(found, answered=partial(with_answer, metadata))


def _asked(metadata: Any) -> AskedQuestion | None:
    if not is_delegation_state(metadata):
        return None
    calls: list[Any] = metadata.get("calls") or []
    if calls:
        return _asked(calls[0].get("metadata")) if len(calls) == 1 else None
    pending: list[Any] = metadata.get("questions") or []
    questions = [q for q in pending if q.get("question") is not None]
    if not questions:
        return None
    first = questions[0]
    return AskedQuestion(asker=str(metadata["delegate"]), question=str(first["question"]),
                         choices=tuple(choices_of(first)), answered=partial(with_answer, metadata))


def is_delegation_state(metadata: object) -> TypeGuard[dict[str, Any]]:
    """Whether a parked call's metadata is what a delegation parks with (`suspension_state`), not an approval's."""
    return isinstance(metadata, dict) and "delegate" in metadata


def with_answer(metadata: dict[str, Any], answer: str | None) -> dict[str, Any]:
    """The parked state with the person's answer (None: nobody answered) put where the asking delegate reads it."""
    calls: list[Any] = metadata.get("calls") or []
    if calls:
        inner = calls[0].get("metadata")
        return {**metadata, "calls": [{**calls[0], "metadata": with_answer(inner, answer)}, *calls[1:]]}
    return {**metadata, "answer": answer}


def questions_of(requests: DeferredToolRequests) -> list[Any]:
    return [call for call in requests.calls if call.tool_name == ASK_PARENT]


def answers_for(state: dict[str, Any]) -> dict[str, str]:
    """A result for every call the delegate deferred: the person's answer to the question that was asked
    (the first, when no approval came first), and a sentence for the rest."""
    deferred: list[Any] = state.get("questions") or []
    put = not state.get("calls") and _asked(state) is not None
    answers: dict[str, str] = {}
    for index, call in enumerate(deferred):
        if call.get("question") is None:
            answers[call["tool_call_id"]] = NOT_RUN_HERE
        elif index == 0 and put:
            answer = state.get("answer")
            answers[call["tool_call_id"]] = NOBODY_ANSWERED if answer is None else str(answer)
        else:
            answers[call["tool_call_id"]] = NOT_ASKED
    return answers
