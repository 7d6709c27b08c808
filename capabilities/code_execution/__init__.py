"""`code_execution`: `run_python` computes in Monty, a sandboxed Python interpreter with no network and no filesystem.

Each call gets a fresh Monty worker subprocess (`pydantic-monty`) with the agent's time and memory limits, so
nothing survives from one call to the next and a program that crashes its interpreter takes only that worker
down. The worker runs off the event loop: a program spinning until its limit never stalls other chats.

Monty is not CPython: it has the language, `json`, `re`, `math`, `datetime` and a few more, but no third-party
packages, no `subprocess`, no `socket`, and a filesystem that answers every path with `PermissionError`.
What comes back, by whose mistake it is (`capabilities/run/tool_replies.py`):

| The program                                   | The tool                                    |
|-----------------------------------------------|---------------------------------------------|
| has a syntax error or raises (name, type, …)  | a retry with the traceback                  |
| reaches for a file, a module Monty lacks      | text saying what the sandbox does not have  |
| runs past `timeout_secs` / `max_memory_mb`    | text naming the limit                       |
| prints more than `OUTPUT_LIMIT` characters    | the first part, with a note of what was cut |
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from capabilities.registry import CapabilityDef, Deferred, ToolInfo


class CodeExecutionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    timeout_secs: float = Field(10, gt=0, le=120)
    """Seconds one program may compute before it is stopped; more than 0, at most 120."""
    max_memory_mb: int = Field(256, ge=16, le=4096)
    """Megabytes of heap one program may hold; 16 to 4096."""


CAPABILITY = CapabilityDef(
    id="code_execution", name="Run Python", category="analysis", config=CodeExecutionConfig,
    build=Deferred("capabilities.code_execution.build:build"),
    scopes=frozenset({"code:execute"}),
    description="Runs small Python programs in a sandbox with no network and no filesystem, to compute exactly.",
    tools=(ToolInfo(id="run_python", summary="Runs a small Python program to compute something."),))
