"""`planning`: the harness's checklist tools, with a plan that belongs to the conversation.

The harness keeps the plan in a store for one run; a chat message is a run here, and so is the
continuation of a run parked on an approval. So the store is filled from the conversation's
`conversation_state` row when the run starts and written back when it stops (a park included). A
finished plan (every step completed or cancelled) is history: a new turn starts without it, while
the row keeps it, and a turn that opened empty over it and added nothing writes nothing. A plan
with a `blocked` step is outstanding work and is carried. A continuation after an approval gets the
stored plan untouched, since by construction it is mid-plan.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from capabilities.registry import CapabilityDef, Deferred, ToolInfo

FLAT_TOOLS = ("write_plan", "read_plan", "add_task", "update_task_status", "update_task_statuses", "remove_task")
SUBTASK_TOOLS = ("add_subtask", "set_dependency", "get_available_tasks")


class PlanningConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    enable_subtasks: bool = False
    """Adds add_subtask, set_dependency and get_available_tasks, and the `blocked` status."""
    cache_ttl: Literal["5m", "1h"] = "5m"
    """How long the prompt prefix before the plan reminder may be cached."""


def offered(config: PlanningConfig) -> tuple[str, ...]:
    return FLAT_TOOLS + SUBTASK_TOOLS if config.enable_subtasks else FLAT_TOOLS


CAPABILITY = CapabilityDef(
    id="planning", name="Planning", category="reasoning", config=PlanningConfig,
    build=Deferred("capabilities.planning.build:build"), offered=offered,
    description="A checklist the agent keeps for itself while it works, carried across the turns of a conversation.",
    tools=(ToolInfo(id="write_plan", summary="Lays out the whole checklist, or replaces it."),
           ToolInfo(id="read_plan", summary="Shows the steps and their ids before a fine-grained change."),
           ToolInfo(id="add_task", summary="Adds one step without replacing the plan."),
           ToolInfo(id="update_task_status", summary="Changes one step's status."),
           ToolInfo(id="update_task_statuses", summary="Changes several steps' statuses at once."),
           ToolInfo(id="remove_task", summary="Deletes a step that no longer belongs in the plan."),
           ToolInfo(id="add_subtask", summary="Adds a subtask under a step (enable_subtasks)."),
           ToolInfo(id="set_dependency", summary="Makes one step wait for another (enable_subtasks)."),
           ToolInfo(id="get_available_tasks", summary="Lists the steps that can be worked on now (enable_subtasks).")))
