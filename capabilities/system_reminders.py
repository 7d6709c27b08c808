"""`system_reminders`: the harness's `SystemReminders`, counting across the whole conversation.

The harness counts model requests and firings per run. A chat message is a run here, so the
counters are loaded from the conversation's `conversation_state` row when a run starts and written
back when it stops: a reminder meant for every tenth request keeps counting where the last turn left
off, and `max_fires` caps it across the conversation. Only counters are stored; the reminder text
is injected per request by the harness and never enters the transcript.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import RunContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai_harness.system_reminders import SystemReminders
from pydantic_ai_harness.system_reminders._capability import GoalReanchor, LLMReminder, Reminder

from capabilities.context import BuildContext, ConversationState
from capabilities.registry import CapabilityDef

STATE_KEY = "system_reminders"


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

    reminders: list[FixedReminder] = Field(default_factory=list)
    """Fixed lines you write, each on its own cadence. Costs nothing."""
    goal_reanchor: Cadence | None = None
    """Points the model back at the conversation's first request. Costs nothing."""
    llm_reminder: Cadence | None = None
    """A short nudge written by the run's own model from the recent transcript: one model call per firing,
    booked to the run; on any error it falls back to the goal re-anchor."""


@dataclass
class _Cadenced:
    """A harness dynamic reminder, asked only when its own cadence is due."""

    name: str
    cadence: Cadence
    reminder: Callable[[RunContext[Any]], Any]
    owner: ConversationReminders

    async def __call__(self, ctx: RunContext[Any]) -> Any:
        fired = self.owner.dynamic_fires.get(self.name, 0)
        if not self.cadence.due(self.owner.request_count, fired):
            return None
        text = self.reminder(ctx)
        if inspect.isawaitable(text):
            text = await text
        if text is not None:
            self.owner.dynamic_fires[self.name] = fired + 1
        return text


@dataclass
class ConversationReminders(SystemReminders[Any]):
    """`SystemReminders` whose counters are the conversation's rather than the run's."""

    state: ConversationState | None = None
    dynamic: Mapping[str, Cadence] = field(default_factory=dict)
    """`goal_reanchor` / `llm_reminder` → its cadence."""
    dynamic_fires: dict[str, int] = field(default_factory=dict)

    @property
    def request_count(self) -> int:
        return self._request_count

    async def for_run(self, ctx: RunContext[Any]) -> ConversationReminders:
        clone = await super().for_run(ctx)
        assert isinstance(clone, ConversationReminders)
        stored = (await self.state.load(STATE_KEY) if self.state is not None else None) or {}
        # The harness keeps these per run; restoring them is what makes the cadence conversation-wide.
        clone._request_count = int(stored.get("requests", 0))
        clone._fire_counts = {id(r): int(n) for r, n in zip(clone.reminders, stored.get("fixed", []), strict=False)}
        clone.dynamic_fires = {name: int(n) for name, n in stored.get("dynamic", {}).items()}
        sources: dict[str, Callable[[RunContext[Any]], Any]] = {
            "goal_reanchor": GoalReanchor(), "llm_reminder": LLMReminder(model=ctx.model)}
        clone.dynamic_reminders = tuple(_Cadenced(name, cadence, sources[name], clone)
                                        for name, cadence in self.dynamic.items())
        return clone

    async def wrap_run(self, ctx: RunContext[Any], *,
                       handler: Callable[[], Awaitable[AgentRunResult[Any]]]) -> AgentRunResult[Any]:
        try:
            return await handler()
        finally:
            if self.state is not None:
                await self.state.save(STATE_KEY, {
                    "requests": self._request_count,
                    "fixed": [self._fire_counts.get(id(r), 0) for r in self.reminders],
                    "dynamic": self.dynamic_fires})


def build(context: BuildContext[SystemRemindersConfig]) -> ConversationReminders | None:
    """Nothing when no kind of reminder is configured: an empty configuration means no reminders."""
    config = context.config
    dynamic = {name: cadence for name, cadence in (("goal_reanchor", config.goal_reanchor),
                                                   ("llm_reminder", config.llm_reminder)) if cadence is not None}
    if not config.reminders and not dynamic:
        return None
    fixed = [Reminder(r.text, interval=r.interval, first_after=r.first_after, max_fires=r.max_fires, tag=None)
             for r in config.reminders]
    # Placeholders until `for_run` binds each to the run; the harness requires one reminder at construction.
    placeholders = [lambda _ctx: None for _ in dynamic]
    return ConversationReminders(reminders=fixed, dynamic_reminders=placeholders, state=context.run.state,
                                 dynamic=dynamic)


CAPABILITY = CapabilityDef(
    id="system_reminders", name="System reminders", category="reasoning", tools=(),
    config=SystemRemindersConfig, build=build,
    description="Repeats steering guidance on a cadence across the conversation, so a long session does not "
                "drift from its instructions.")
