"""What `reminders` binds when the gateway starts: the reminders table, and each agent's `clock` time zone."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from capabilities.clock import CAPABILITY as CLOCK
from capabilities.run import Deployment
from storage.reminders import Reminders


@dataclass(frozen=True, slots=True, kw_only=True)
class RemindersServices:
    reminders: Reminders
    clock_zones: Mapping[str, str] = field(default_factory=dict[str, str])
    """The time zone each agent's `clock` entry reads, by agent name: where the config sets none."""


def bind(deployment: Deployment) -> RemindersServices:
    zones: dict[str, str] = {}
    for agent in deployment.config.agents:
        entry: Any = next((e for e in agent.capabilities if e.id == CLOCK.id and e.enabled), None)
        if entry is not None:
            zones[agent.name] = str(CLOCK.config.model_validate(entry.config or {}).timezone)
    return RemindersServices(reminders=Reminders(deployment.db), clock_zones=zones)
