"""`reminders`: the agent sets reminders and scheduled runs for the conversation it runs in.

`schedule_message` posts a text at a time, `schedule_run` runs the agent then with instructions; either once or
again by a cron expression (`repeat`), which asks a person's approval first unless the config says otherwise.
Where a reminder posts is the run's own conversation, decided by the server: no tool names a chat, and
`list_schedules` and `cancel_schedule` reach only that conversation's. Times are read in the config's time zone (by
default the agent's `clock` time zone, else UTC). The gateway's scheduler fires each one once, across replicas and
restarts (`gateway/pipeline/scheduler.py`), as the person who set it: their access, budget and, in a DM, their notes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from capabilities.registry import CapabilityDef, Deferred, ToolInfo
from storage.recurrence import zone_problem


class RemindersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    timezone: str | None = None
    """The IANA time zone the model's times are read in; unset: the agent's `clock` time zone, else UTC."""
    recurring_approval: bool = True
    """A recurring reminder (`repeat`) waits for a person's approval before it is set."""
    max_per_person: int = Field(default=10, ge=1, le=1000)
    """Active reminders one person may have with this agent, in every chat."""
    max_per_conversation: int = Field(default=20, ge=1, le=1000)
    """Active reminders one conversation may hold, whoever set them."""

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        if value is not None and (problem := zone_problem(value)):
            raise ValueError(problem)
        return value


CAPABILITY = CapabilityDef(
    id="reminders", name="Reminders", category="utility", config=RemindersConfig,
    description="Reminders and scheduled runs the agent sets for the conversation it is in, each delivered once.",
    tools=(ToolInfo(id="schedule_message", summary="Post a message in this chat at a later time, once or repeating."),
           ToolInfo(id="schedule_run", summary="Run again in this chat at a later time with instructions, once or "
                                               "repeating."),
           ToolInfo(id="list_schedules", summary="List the reminders and scheduled runs set in this chat."),
           ToolInfo(id="cancel_schedule", summary="Cancel a reminder or scheduled run of this chat.")),
    build=Deferred("capabilities.reminders.build:build"), bind=Deferred("capabilities.reminders.services:bind"),
    lendable=False, fires_later=True)
