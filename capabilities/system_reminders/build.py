"""The tools and builder of `system_reminders`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/system_reminders/__init__.py`."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic_ai import RunContext
from pydantic_ai.models import Model
from pydantic_ai.run import AgentRunResult
from pydantic_ai_harness.system_reminders import SystemReminders
from pydantic_ai_harness.system_reminders._capability import GoalReanchor, LLMReminder, Reminder

from capabilities.run import BuildContext, ConversationState
from capabilities.system_reminders import Cadence, SystemRemindersConfig

STATE_KEY = "system_reminders"


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
    dynamic: Mapping[str, Cadence] = field(default_factory=dict[str, Cadence])
    """`goal_reanchor` / `llm_reminder` → its cadence."""
    dynamic_fires: dict[str, int] = field(default_factory=dict[str, int])

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
            "goal_reanchor": GoalReanchor(),
            "llm_reminder": LLMReminder(model=cast(Model, ctx.model))}  # the run's own model, typed as its base
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
    placeholders: list[Callable[[RunContext[Any]], None]] = [lambda _ctx: None for _ in dynamic]
    return ConversationReminders(reminders=fixed, dynamic_reminders=placeholders, state=context.run.state,
                                 dynamic=dynamic)
