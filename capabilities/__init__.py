"""Agent capabilities: the registry lists every capability this deployment offers, in one tuple."""

from __future__ import annotations

from capabilities import (
    channel_tools,
    charts,
    clock,
    code_execution,
    compaction,
    guardrails,
    image_generation,
    memory_files,
    planning,
    subagents,
    system_reminders,
    thinking,
    tool_output_limits,
)
from capabilities.registry import ALL_SCOPES, CapabilityDef, Registry

CAPABILITIES: tuple[CapabilityDef, ...] = (
    memory_files.CAPABILITY,
    planning.CAPABILITY,
    thinking.CAPABILITY,
    system_reminders.CAPABILITY,
    clock.CAPABILITY,
    guardrails.CAPABILITY,
    compaction.CAPABILITY,
    tool_output_limits.CAPABILITY,
    channel_tools.CAPABILITY,
    subagents.CAPABILITY,
    charts.CAPABILITY,
    code_execution.CAPABILITY,
    image_generation.CAPABILITY,
)


def default_registry(*, granted_scopes: frozenset[str] = ALL_SCOPES) -> Registry:
    return Registry(CAPABILITIES, granted_scopes=granted_scopes)
