"""Every capability this deployment offers, in one tuple, and the registry of them."""

from __future__ import annotations

from typing import Any

from capabilities import (
    ask_person,
    browser_use,
    channel_tools,
    charts,
    clock,
    code_execution,
    compaction,
    context,
    conversation_search,
    guardrails,
    image_generation,
    knowledge,
    memory_files,
    memory_mem0,
    planning,
    reminders,
    sandbox,
    skills,
    subagents,
    system_reminders,
    thinking,
    tool_output_limits,
    tool_search,
    web_fetch,
    web_research,
)
from capabilities.registry import ALL_SCOPES, CapabilityDef, Registry

CAPABILITIES: tuple[CapabilityDef[Any], ...] = (
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
    knowledge.CAPABILITY,
    skills.CAPABILITY,
    context.CAPABILITY,
    web_research.CAPABILITY,
    web_fetch.CAPABILITY,
    conversation_search.CAPABILITY,
    memory_mem0.CAPABILITY,
    tool_search.CAPABILITY,
    charts.CAPABILITY,
    sandbox.CAPABILITY,
    browser_use.CAPABILITY,
    code_execution.CAPABILITY,
    image_generation.CAPABILITY,
    ask_person.CAPABILITY,
    reminders.CAPABILITY,
)


def default_registry(*, granted_scopes: frozenset[str] = ALL_SCOPES, fetch_local: bool = False) -> Registry:
    """`fetch_local` lets `web_fetch` reach private and loopback addresses: for tests and development only."""
    defs: list[CapabilityDef[Any]] = [
        web_fetch.capability(allow_local=True) if d.id == "web_fetch" and fetch_local else d for d in CAPABILITIES]
    return Registry(defs, granted_scopes=granted_scopes)
