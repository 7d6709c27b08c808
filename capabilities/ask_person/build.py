"""The `ask_person` tool, imported with its first build; its declaration is `capabilities/ask_person/__init__.py`."""

from __future__ import annotations

from functools import partial
from typing import Any, cast

from pydantic_ai import ApprovalRequired, RunContext
from pydantic_ai.capabilities import Capability

from capabilities.registry import NOBODY_ANSWERED, AskedQuestion, NoConfig, offered_choices
from capabilities.run import BuildContext
from capabilities.run.tool_replies import function_toolset, retry_or_text

ASKED = "ask_person"
"""The key of a parked call's metadata that holds the question asked; `answer` beside it holds the reply."""
MAX_QUESTION_CHARS = 1_000


async def ask_person(ctx: RunContext[Any], question: str, choices: list[str] | None = None) -> str:
    """Ask the person you are answering a question, and wait for their answer before you go on.

    Use it when you cannot go on without something only they can tell you (which of several options, a missing
    detail), not to confirm what you could reasonably assume. Ask one question per call, and one call at a time.

    Args:
        question: The question, short and self-contained, as the person will read it in the chat.
        choices: When the person should pick one of a few short options, the options (at most 25, each at most
            75 characters): they are shown as buttons, and the answer is the option picked or the person's own
            words. Leave it out for an open question.

    Returns:
        The person's answer, as they gave it; or a sentence saying nobody answered in time.
    """
    state = _state(ctx.tool_call_metadata) if ctx.tool_call_approved else None
    if state is not None:
        answer = state.get("answer")
        return NOBODY_ANSWERED if answer is None else f"The person answered: {answer}"
    asked = " ".join(question.split())
    if not asked or len(asked) > MAX_QUESTION_CHARS:
        return retry_or_text(ctx, f"Give the question as 1 to {MAX_QUESTION_CHARS} characters of text.")
    raise ApprovalRequired(metadata={ASKED: {"question": asked, "choices": offered_choices(choices)}})


def _state(metadata: object) -> dict[str, Any] | None:
    """A parked `ask_person` call's metadata; None for any other."""
    if isinstance(metadata, dict) and isinstance(cast(dict[str, Any], metadata).get(ASKED), dict):
        return cast(dict[str, Any], metadata)
    return None


def asked(metadata: Any) -> AskedQuestion | None:
    """The question a parked `ask_person` call waits on; None for any other parked call."""
    state = _state(metadata)
    if state is None:
        return None
    shown = cast(dict[str, Any], state[ASKED])
    return AskedQuestion(asker="", question=str(shown.get("question", "")),
                         choices=tuple(str(c) for c in shown.get("choices") or ()),
                         answered=partial(_with_answer, state))


def _with_answer(state: dict[str, Any], answer: str | None) -> dict[str, Any]:
    return {**state, "answer": answer}


def build(context: BuildContext[NoConfig]) -> Capability[Any]:
    return Capability(toolsets=[function_toolset([ask_person], toolset_id="ask_person")])
