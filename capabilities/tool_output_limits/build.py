"""The tools and builder of `tool_output_limits`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/tool_output_limits/__init__.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_ai.toolsets import AbstractToolset, AgentToolset
from pydantic_ai_harness.tool_output_limits import (
    READ_TOOL_NAME,
    Band,
    Spill,
    Summarize,
    ToolOutputLimits,
    Truncate,
    TruncationStrategy,
)

from capabilities.run import BuildContext, SpillStore
from capabilities.run.tool_replies import ToolText, described
from capabilities.tool_output_limits import ToolOutputLimitsConfig, offered
from capabilities.tool_output_limits.services import SpillServices

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


@dataclass
class DescribedToolOutputLimits(ToolOutputLimits[Any]):
    """The harness capability, with `read_tool_result` in this repository's words (or withheld)."""

    offers_reader: bool = True

    def get_toolset(self) -> AgentToolset[Any] | None:
        toolset = super().get_toolset()
        if toolset is None or not self.offers_reader:
            return None
        if not isinstance(toolset, AbstractToolset):  # built per run: its tools are not known here to describe
            return toolset
        return described(
            toolset,  # pyright: ignore[reportUnknownArgumentType] - narrowed from pydantic-ai's AgentToolset union
            {READ_TOOL_NAME: READ_TEXT})


def build(context: BuildContext[ToolOutputLimitsConfig]) -> ToolOutputLimits[Any]:
    config = context.config
    truncate = Truncate(strategy=TruncationStrategy(config.truncation_strategy), max_chars=config.max_chars)
    action = {"truncate": truncate, "spill": Spill(then=truncate),
              "summarize": Summarize(then=Spill(then=truncate))}[config.action]
    prompt: dict[str, Any] = {"summary_prompt": config.summary_prompt} if config.summary_prompt else {}
    return DescribedToolOutputLimits(bands=[Band(over=config.threshold, action=action)], store=spills_of(context),
                                     over_tokens=config.over_tokens, strip_ansi=config.strip_ansi,
                                     offers_reader=bool(offered(config)), **prompt)


async def discard_spills(context: BuildContext[ToolOutputLimitsConfig]) -> None:
    """A spill is an artefact of its run: gone when the run ends."""
    await spills_of(context).discard()


def spills_of(context: BuildContext[ToolOutputLimitsConfig]) -> SpillStore:
    """The run's spill store: one per run id, so the build and the run's end reach the same spills."""
    return context.bound(SpillServices).spills(context.run_id)
