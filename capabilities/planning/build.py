"""The tools and builder of `planning`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/planning/__init__.py`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, CombinedCapability
from pydantic_ai.run import AgentRunResult
from pydantic_ai_harness.planning import InMemoryPlanStore, PlanItem, Planning, TaskStatus

from capabilities.planning import PlanningConfig, offered
from capabilities.run import BuildContext, ConversationState
from capabilities.run.tool_replies import ToolText

STATE_KEY = "planning"
_FINISHED = frozenset({TaskStatus.completed, TaskStatus.cancelled})
_REJECTED = "a line saying why nothing changed (an unknown id, a status this plan does not allow)"
TEXTS = {
    "write_plan": ToolText(
        summary="Lay out the whole checklist for multi-step work, or replace it. Call it first, then keep "
                "exactly one step `in_progress`; for a single change prefer add_task or update_task_status.",
        returns=f"`Plan updated: N step(s).` and the checklist, one numbered line per step with its status; or "
                f"`Plan not updated: ...` with the reason ({_REJECTED}), in which case nothing was stored."),
    "read_plan": ToolText(
        summary="Show the current checklist with each step's id and status. Use it before a fine-grained change "
                "(the ids come from here) and to see what is left.",
        returns="`Current plan:` then one numbered line per step: a status mark, `[id]` and the text; then a "
                "tally such as `2 completed, 1 in progress, 3 pending`; or `No plan yet. Use write_plan to create "
                "one.`"),
    "add_task": ToolText(
        summary="Append one `pending` step to the checklist without replacing it. Use write_plan to restructure "
                "the whole plan.",
        returns="`Added step '<text>' with id: <id>`."),
    "update_task_status": ToolText(
        summary="Change one step's status by id: `in_progress` when you start it, `completed` only when it is "
                "fully done, `cancelled` when it no longer applies. For several steps at once use "
                "update_task_statuses.",
        returns=f"`Updated step '<text>' status to '<status>'.`; or {_REJECTED}."),
    "update_task_statuses": ToolText(
        summary="Change several steps' statuses in one call, applied in order: finish one step and start the next "
                "together. The batch is checked first; if any entry is invalid, nothing changes.",
        returns="`Updated N step(s):` then one line per step; or `No changes applied. Errors:` with one line per "
                "invalid entry."),
    "remove_task": ToolText(
        summary="Delete a step that no longer belongs in the plan (created by mistake, or irrelevant). To mark "
                "work as done use update_task_status instead.",
        returns="`Removed step '<text>' (id: <id>).`; or `Step with id '<id>' not found.`"),
    "add_subtask": ToolText(
        summary="Add a `pending` subtask under an existing step, to break it into independently completable "
                "parts; finish the subtasks before the parent.",
        returns="`Added subtask '<text>' with id: <id> (parent: <parent id>)`; or a line saying the parent was "
                "not found."),
    "set_dependency": ToolText(
        summary="Record that one step must wait for another; the waiting step is `blocked` until its prerequisite "
                "is completed or cancelled. Self-dependencies, cycles and duplicates are refused.",
        returns="`Added dependency: '<step>' now depends on '<prerequisite>'.`; or a line saying why it was "
                "refused."),
    "get_available_tasks": ToolText(
        summary="List the steps that can be worked on now: not done, not blocked, no unfinished prerequisites. "
                "Use it to pick the next step when dependencies are involved.",
        returns="`Available steps (no blocking dependencies):` then one line per step with its id; or a line "
                "saying no step is available."),
}


@dataclass
class ConversationPlan(AbstractCapability[Any]):
    """Fills the run's plan store from the conversation and writes it back when the run stops."""

    store: InMemoryPlanStore
    state: ConversationState
    resuming: bool = False

    async def wrap_run(self, ctx: RunContext[Any], *,
                       handler: Callable[[], Awaitable[AgentRunResult[Any]]]) -> AgentRunResult[Any]:
        opened = await self._fill()
        try:
            return await handler()
        finally:
            items = [item.model_dump(mode="json") for item in await self.store.get_items()]
            if items != opened:
                await self.state.save(STATE_KEY, {"items": items})

    async def _fill(self) -> list[dict[str, Any]]:
        stored = await self.state.load(STATE_KEY) or {}
        items = [PlanItem.model_validate(item) for item in stored.get("items", [])]
        if not self.resuming and items and all(item.status in _FINISHED for item in items):
            items = []
        await self.store.set_items(items)
        return [item.model_dump(mode="json") for item in items]


def build(context: BuildContext[PlanningConfig]) -> AbstractCapability[Any]:
    config = context.config
    store = InMemoryPlanStore()
    planning = Planning(store=store, enable_subtasks=config.enable_subtasks, cache_ttl=config.cache_ttl,
                        descriptions={name: TEXTS[name].render() for name in offered(config)})
    if context.run.state is None:  # no conversation: the plan lasts as long as the run
        return planning
    return CombinedCapability([planning, ConversationPlan(store=store, state=context.run.state,
                                                          resuming=context.run.resuming)])
