"""The tools and builder of `compaction`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/compaction/__init__.py`."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse
from pydantic_ai.capabilities import AbstractCapability, WrapperCapability
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext
from pydantic_ai_harness.compaction import (
    ClearToolResults,
    SlidingWindowCompaction,
    SummarizingCompaction,
    TieredCompaction,
    estimate_token_count,
    resolve_context_window,
)

from capabilities.compaction import CompactionConfig
from capabilities.run import BuildContext

Notice = Callable[[str], None]


def build(context: BuildContext[CompactionConfig]) -> AbstractCapability[Any]:
    notice = context.run.notice
    return Compaction(wrapped=_strategy(context.config, notice), config=context.config, notice=notice)


def _strategy(config: CompactionConfig, notice: Notice | None) -> AbstractCapability[Any]:
    window: dict[str, Any] = {"context_window": config.context_window,
                              "fallback_context_window": config.fallback_context_window}
    prompt: dict[str, Any] = {"summary_prompt": config.summary_prompt} if config.summary_prompt else {}
    match config.strategy:
        case "summarize":
            return AnnouncedSummary(max_fraction=config.max_fraction, keep_messages=config.keep_messages,
                                    notice=notice, **prompt, **window)
        case "clear_tool_results":
            return ClearToolResults(max_fraction=config.max_fraction, keep_pairs=config.keep_tool_pairs, **window)
        case "sliding_window":
            return SlidingWindowCompaction(max_fraction=config.max_fraction, keep_messages=config.keep_messages,
                                           **window)
        case "tiered":
            tiers = [ClearToolResults(max_tokens=1, keep_pairs=config.keep_tool_pairs),
                     AnnouncedSummary(max_messages=1, keep_messages=config.keep_messages, notice=notice, **prompt)]
            return TieredCompaction(tiers=tiers, target_fraction=config.max_fraction, **window)


@dataclass
class AnnouncedSummary(SummarizingCompaction[Any]):
    """The harness's summarizer, which says in the chat what it summarizes while the request runs."""

    notice: Notice | None = field(default=None, kw_only=True)
    """The live reply's status line (`RunFacts.notice`); None outside a chat run."""

    async def _summarize(self, messages: list[ModelMessage], ctx: RunContext[Any], *,
                         previous_summary: str | None = None) -> Any:
        notice = self.notice
        if notice is None:
            return await super()._summarize(messages, ctx, previous_summary=previous_summary)
        notice(f"Summarizing {len(messages)} earlier messages of this run (about "
               f"{estimate_token_count(messages):,} tokens) to stay within the context window…")
        try:
            return await super()._summarize(messages, ctx, previous_summary=previous_summary)
        finally:
            notice("")


@dataclass
class _RunState:
    overhead: int | None = None
    """Reported input tokens of the last response less the estimate of its message parts."""
    gave_up: bool = False


@dataclass
class Compaction(WrapperCapability[Any]):
    """The harness strategy, off for the rest of a run whose fixed overhead is past the trigger."""

    config: CompactionConfig = field(kw_only=True)
    notice: Notice | None = field(default=None, kw_only=True)
    run: _RunState = field(default_factory=_RunState, kw_only=True)

    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        fresh = copy.copy(await super().for_run(ctx))
        assert isinstance(fresh, Compaction)
        fresh.run = _RunState()
        return fresh

    async def before_model_request(self, ctx: RunContext[Any],
                                   request_context: ModelRequestContext) -> ModelRequestContext:
        overhead = self.run.overhead
        if overhead is not None:
            window = (self.config.context_window or resolve_context_window(request_context.model)
                      or self.config.fallback_context_window)
            trigger = max(1, int(window * self.config.max_fraction))
            if overhead >= trigger:
                self._give_up(overhead, window)
                return request_context
        return await super().before_model_request(ctx, request_context)

    async def after_model_request(self, ctx: RunContext[Any], *, request_context: ModelRequestContext,
                                  response: ModelResponse) -> ModelResponse:
        if response.usage.input_tokens:
            parts = [replace(m, instructions=None) if isinstance(m, ModelRequest) else m
                     for m in request_context.messages]
            self.run.overhead = max(0, response.usage.input_tokens - estimate_token_count(parts))
        return await super().after_model_request(ctx, request_context=request_context, response=response)

    def _give_up(self, overhead: int, window: int) -> None:
        if self.run.gave_up:
            return
        self.run.gave_up = True
        notice = self.notice
        if notice is not None:
            fraction = self.config.max_fraction
            notice(f"Context management is off for this run: every request carries about {overhead:,} tokens of "
                   f"instructions and tool schemas, past {fraction:g} of the {window:,}-token context window it "
                   f"was measured against. A context_window above {math.ceil(overhead / fraction):,} leaves room "
                   f"to compact.")
