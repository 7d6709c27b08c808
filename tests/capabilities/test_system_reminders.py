"""Reminders fire on a cadence that counts model requests across the whole conversation."""

from __future__ import annotations

from typing import Any

from pydantic_ai import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo

from storage.conversation_state import StoredConversationState
from storage.db import Database
from tests.support.capability_runs import MemoryState, assembled, binding_with, run
from tests.support.scripted import scripted

REMINDER_WRITER = "stay-on-task reminder"
"""Words of the harness's own instructions to the model that writes an LLM reminder."""


def reminders_seen(messages: list[ModelMessage]) -> str:
    """The request-scoped system text that reached the model with this request."""
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    return " ".join(str(p.content) for p in request.parts
                    if isinstance(p, UserPromptPart) and str(p.content).startswith("<system>"))


async def turns(config: dict[str, Any], count: int, state: Any) -> list[str]:
    """`count` turns of one request each; what the model was reminded of on each."""
    seen: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> str:
        if REMINDER_WRITER in (info.instructions or ""):
            return "Finish the release notes first."
        seen.append(reminders_seen(messages))
        return "ok"

    binding = binding_with([{"id": "system_reminders", "config": config}])
    for turn in range(count):
        await run(assembled(binding, scripted(model), state=state), f"turn {turn}", binding=binding)
    return seen


async def test_the_cadence_counts_across_turns_not_within_each_run() -> None:
    seen = await turns({"reminders": [{"text": "Stay on the release.", "interval": 3}]}, 6, MemoryState())
    assert [bool(s) for s in seen] == [False, False, True, False, False, True]
    assert "Stay on the release." in seen[2]


async def test_max_fires_caps_a_reminder_across_the_conversation() -> None:
    seen = await turns({"reminders": [{"text": "Say hello.", "max_fires": 2}]}, 4, MemoryState())
    assert [bool(s) for s in seen] == [True, True, False, False]


async def test_the_goal_reanchor_fires_on_its_own_cadence() -> None:
    seen = await turns({"goal_reanchor": {"first_after": 2, "interval": 2}}, 4, MemoryState())
    assert [bool(s) for s in seen] == [False, True, False, True]
    assert "original request" in seen[1]


async def test_an_llm_reminder_is_written_by_the_run_s_model() -> None:
    seen = await turns({"llm_reminder": {"interval": 2}}, 2, MemoryState())
    assert not seen[0]
    assert "stay-on-task note" in seen[1]


async def test_only_the_counters_are_stored(db: Database) -> None:
    state = StoredConversationState(db, "telegram:helper:-100:-")
    await turns({"reminders": [{"text": "A", "interval": 2}, {"text": "B"}], "goal_reanchor": {"interval": 5}}, 3,
                state)
    assert await state.load("system_reminders") == {"requests": 3, "fixed": [1, 3], "dynamic": {}}


async def test_an_empty_configuration_attaches_nothing() -> None:
    state = MemoryState()
    seen = await turns({}, 1, state)
    assert seen == [""] and state.rows == {}
