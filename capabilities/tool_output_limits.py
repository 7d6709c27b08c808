"""`tool_output_limits`: the harness's `ToolOutputLimits`, one action at one threshold.

An oversized tool return is reduced once, when it is produced, and the reduced form persists in
the run's history. `spill` keeps it whole in the run's spill store (`RunFacts.spills`, durable rows the gateway
keeps across a park, so a handle still reads after a resume on another replica) and hands the model a handle
for `read_tool_result`; the spills are discarded when the run ends (`on_run_end`); `truncate` cuts it
with a marker; `summarize` asks the run's model for a summary, falling back to a spill and then to
a truncation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai.toolsets import AgentToolset
from pydantic_ai_harness.tool_output_limits import (
    READ_TOOL_NAME,
    Band,
    Spill,
    Summarize,
    ToolOutputLimits,
    Truncate,
    TruncationStrategy,
)

from capabilities.context import BuildContext
from capabilities.registry import CapabilityDef, ToolInfo
from capabilities.tool_text import ToolText, described

READ_TEXT = ToolText(
    summary="Read part of a tool result that was too large to show in full and was stored instead. Use it with "
            "the handle from a `[Tool output too large ...; stored to handle '...']` marker, a slice at a time, "
            "rather than running the original tool again.",
    returns="A header `[handle '<handle>': N matching line(s); showing M]` and then those lines, at most 1,000 "
            "lines and 50,000 characters per call (the header says `output capped` when cut); or "
            "`[No stored tool result for handle ...]` for a handle that is wrong or no longer stored.",
    args={"handle": "The exact handle string from the marker, e.g. `call_1` as quoted there.",
          "offset": "Lines to skip from the start (or from the end with from_end); default 0.",
          "limit": "How many lines to return; default 200, at most 1,000.",
          "from_end": "Count offset and limit from the end of the result, e.g. to read the last lines of a log; "
                      "default false.",
          "pattern": "Only return lines containing this literal text (not a regular expression); default: "
                     "every line."})


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


@dataclass
class DescribedToolOutputLimits(ToolOutputLimits[Any]):
    """The harness capability, with `read_tool_result` in this repository's words (or withheld)."""

    offers_reader: bool = True

    def get_toolset(self) -> AgentToolset[Any] | None:
        toolset = super().get_toolset()
        if toolset is None or not self.offers_reader:
            return None
        return described(toolset, {READ_TOOL_NAME: READ_TEXT})


def offered(config: ToolOutputLimitsConfig) -> tuple[str, ...]:
    """A plain truncation stores nothing, so there is nothing to read back."""
    return () if config.action == "truncate" else (READ_TOOL_NAME,)


def build(context: BuildContext[ToolOutputLimitsConfig]) -> ToolOutputLimits[Any]:
    config = context.config
    truncate = Truncate(strategy=TruncationStrategy(config.truncation_strategy), max_chars=config.max_chars)
    action = {"truncate": truncate, "spill": Spill(then=truncate),
              "summarize": Summarize(then=Spill(then=truncate))}[config.action]
    prompt = {"summary_prompt": config.summary_prompt} if config.summary_prompt else {}
    return DescribedToolOutputLimits(bands=[Band(over=config.threshold, action=action)], store=context.spills,
                                     over_tokens=config.over_tokens, strip_ansi=config.strip_ansi,
                                     offers_reader=bool(offered(config)), **prompt)


async def discard_spills(context: BuildContext[ToolOutputLimitsConfig]) -> None:
    """A spill is an artefact of its run: gone when the run ends."""
    await context.spills.discard()


CAPABILITY = CapabilityDef(
    id="tool_output_limits", name="Tool output limits", category="utility", config=ToolOutputLimitsConfig,
    build=build, offered=offered, on_run_end=discard_spills,
    description="Reduces an oversized tool return once, when it is produced: spill it whole, truncate it, or "
                "summarize it.",
    tools=(ToolInfo(id=READ_TOOL_NAME, summary="Reads a slice of a tool result that was stored because it was "
                                               "too large."),))
