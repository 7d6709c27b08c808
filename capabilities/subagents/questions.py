"""Questions a synchronous delegate puts to the person: parked with the run, answered in the chat."""

from __future__ import annotations

from typing import Any, TypeGuard

from pydantic_ai import CallDeferred, DeferredToolRequests

ASK_PARENT = "ask_parent"
"""The library's tool a synchronous delegate asks the parent agent's person with."""
NOBODY_ANSWERED = ("Nobody answered your question before it expired. Continue with what you have, and say in "
                   "your answer what you had to assume.")
NOT_ASKED = ("This question was not put to the person: ask one question at a time, and only once no other call "
             "of yours is waiting for a decision.")
NOT_RUN_HERE = "This call cannot be completed from here; continue without it."


async def ask_in_chat(question: str) -> str:
    """The gateway's `ask_user`: a delegate's question parks the whole run rather than blocking it.

    The deferred `ask_parent` call ends the delegate's run with it in `DeferredToolRequests.calls`; the
    delegation tool then parks the parent's `task` call with the question, and the chat asks the person.
    """
    raise CallDeferred(metadata={"question": question})


def asked(metadata: Any) -> tuple[str, str] | None:
    """(specialist, question) when a parked call waits on a delegate's question to the person, looking
    through nested delegations; None for an approval or anything else."""
    if not is_delegation_state(metadata):
        return None
    calls: list[Any] = metadata.get("calls") or []
    if calls:
        return asked(calls[0].get("metadata")) if len(calls) == 1 else None
    pending: list[Any] = metadata.get("questions") or []
    questions = [q for q in pending if q.get("question") is not None]
    return (str(metadata["delegate"]), str(questions[0]["question"])) if questions else None


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
    put = not state.get("calls") and asked(state) is not None
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
