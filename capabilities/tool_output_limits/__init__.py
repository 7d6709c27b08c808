"""`tool_output_limits`: the harness's `ToolOutputLimits`, one action at one threshold.

An oversized tool return is reduced once, when it is produced, and the reduced form persists in
the run's history. `spill` keeps it whole in the run's spill store (`RunFacts.spills`, durable rows the gateway
keeps across a park, so a handle still reads after a resume on another replica) and hands the model a handle
for `read_tool_result`; the spills are discarded when the run ends (`on_run_end`); `truncate` cuts it
with a marker; `summarize` asks the run's model for a summary, falling back to a spill and then to
a truncation.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from capabilities.registry import CapabilityDef, Deferred, ToolInfo

READ_TOOL = "read_tool_result"
"""pydantic-ai-harness's `READ_TOOL_NAME`, spelt out so the declaration does not import the harness; the drift
test (`tests/capabilities/test_registry_drift.py`) holds what the builder offers to it."""


class ToolOutputLimitsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    action: Literal["spill", "truncate", "summarize"] = "spill"
    """`spill` is lossless (the model reads slices back); `truncate` is cheap and lossy; `summarize` costs a
    model call."""
    threshold: int = Field(default=10_000, ge=100, le=10_000_000)
    """Size from which a return is reduced (characters, or tokens with `over_tokens`)."""
    over_tokens: bool = False
    """Measure the threshold in estimated tokens rather than characters."""
    max_chars: int = Field(default=4_000, ge=200, le=200_000)
    """Characters kept when a return is truncated, or when a spill falls back to truncation."""
    truncation_strategy: Literal["head", "tail", "head_tail"] = "head_tail"
    """Which end or ends of a truncated return are kept."""
    strip_ansi: bool = False
    """Strip terminal colour codes before measuring and reducing."""
    summary_prompt: str | None = None
    """What the summarizing model is told; must contain `{tool_name}` and `{output}`. Unset: the library's."""

    @field_validator("summary_prompt")
    @classmethod
    def _has_fields(cls, value: str | None) -> str | None:
        missing = [name for name in ("{tool_name}", "{output}") if value is not None and name not in value]
        if missing:
            raise ValueError(f"must contain {' and '.join(missing)}, where the tool's name and output are inserted")
        return value


def offered(config: ToolOutputLimitsConfig) -> tuple[str, ...]:
    """A plain truncation stores nothing, so there is nothing to read back."""
    return () if config.action == "truncate" else (READ_TOOL,)


CAPABILITY = CapabilityDef(
    id="tool_output_limits", name="Tool output limits", category="utility", config=ToolOutputLimitsConfig,
    build=Deferred("capabilities.tool_output_limits.build:build"),
    bind=Deferred("capabilities.tool_output_limits.services:bind"), offered=offered,
    on_run_end=Deferred("capabilities.tool_output_limits.build:discard_spills"),
    description="Reduces an oversized tool return once, when it is produced: spill it whole, truncate it, or "
                "summarize it.",
    tools=(ToolInfo(id=READ_TOOL, summary="Reads a slice of a tool result that was stored because it was "
                                               "too large."),))
