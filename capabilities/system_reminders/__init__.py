"""`system_reminders`: the harness's `SystemReminders`, counting across the whole conversation.

The harness counts model requests and firings per run. A chat message is a run here, so the
counters are loaded from the conversation's `conversation_state` row when a run starts and written
back when it stops: a reminder meant for every tenth request keeps counting where the last turn left
off, and `max_fires` caps it across the conversation. Only counters are stored; the reminder text
is injected per request by the harness and never enters the transcript.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from capabilities.registry import CapabilityDef, Deferred


class Cadence(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    interval: int = Field(default=1, ge=1, le=1000)
    """Fire on every Nth model request of the conversation."""
    first_after: int | None = Field(default=None, ge=1)
    """The request number of the first firing; unset: the first multiple of `interval`."""
    max_fires: int | None = Field(default=None, ge=1)
    """How often it may fire across the whole conversation; unset: no cap."""

    def due(self, request: int, fired: int) -> bool:
        first = self.first_after or self.interval
        capped = self.max_fires is not None and fired >= self.max_fires
        return not capped and request >= first and (request - first) % self.interval == 0


class FixedReminder(Cadence):
    text: str = Field(min_length=1, max_length=4000)
    """The line injected, as written."""


class SystemRemindersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    reminders: list[FixedReminder] = Field(default_factory=list[FixedReminder])
    """Fixed lines you write, each on its own cadence. Costs nothing."""
    goal_reanchor: Cadence | None = None
    """Points the model back at the conversation's first request. Costs nothing."""
    llm_reminder: Cadence | None = None
    """A short nudge written by the run's own model from the recent transcript: one model call per firing,
    booked to the run; on any error it falls back to the goal re-anchor."""


CAPABILITY = CapabilityDef(
    id="system_reminders", name="System reminders", category="reasoning", tools=(),
    config=SystemRemindersConfig, build=Deferred("capabilities.system_reminders.build:build"),
    description="Repeats steering guidance on a cadence across the conversation, so a long session does not "
                "drift from its instructions.")
