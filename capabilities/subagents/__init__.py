"""`subagents` (Delegation): hands self-contained work to specialists, on subagents-pydantic-ai.

Three kinds of delegate: inline specialists written in this config, other agents of this gateway named
in the spec's top-level `subagents` (built from their own spec, with their own capabilities and approval
gates), and Markdown files in `agent_folders`. Beside the catalog's settings the config carries the
harness SubAgents controls: a model menu the model picks from per delegation, and per delegate
`usage_limits`, `timeout_seconds`, `max_calls`, `on_failure` and `contain_errors` (`config.py`).
`delegation.py` is the run-time half, `texts.py` what the model is told about it.
"""

from __future__ import annotations

from capabilities.registry import CapabilityDef, Deferred, ToolInfo
from capabilities.subagents.config import SubagentsConfig, offered

__all__ = ["CAPABILITY", "SubagentsConfig"]

CAPABILITY = CapabilityDef(
    id="subagents", name="Delegation", category="reasoning", config=SubagentsConfig, offered=offered,
    build=Deferred("capabilities.subagents.delegation:build_delegation"),
    scopes=frozenset({"agents:delegate"}), asks_in_chat=True,
    description="Hands self-contained work to specialists and to other agents of this gateway, each on its own "
                "model and step limit; their usage counts into the run.",
    tools=(ToolInfo(id="task", summary="Hands a self-contained piece of work to one of this agent's delegates."),
           ToolInfo(id="check_task", summary="Shows one background delegation's status, or its full result."),
           ToolInfo(id="wait_tasks", summary="Waits for background delegations and shows their results."),
           ToolInfo(id="list_active_tasks", summary="Lists the background delegations still running."),
           ToolInfo(id="answer_subagent", summary="Answers a background delegate's question (offered to no "
                                                  "model: no delegate here parks on one)."),
           ToolInfo(id="send_message_to_subagent", summary="Steers a running background delegation.",
                    side_effecting=True),
           ToolInfo(id="soft_cancel_task", summary="Asks a background delegation to stop at its next step.",
                    side_effecting=True),
           ToolInfo(id="hard_cancel_task", summary="Stops a background delegation at once.", side_effecting=True),
           ToolInfo(id="create_agent", summary="Writes a specialist for the rest of this run (allow_dynamic)."),
           ToolInfo(id="delegate", summary="Writes a one-shot specialist and hands it a task (allow_dynamic).")))
