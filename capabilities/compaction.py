"""`compaction`: the harness's strategies for trimming a long run's history before each request.

Its reach is one run: between turns the history is rebuilt from the transcript as text, so what is
worth compacting is the long tool loop inside a single run. A summary runs on the run's own model
and the harness folds its usage into the run's, which is what the run row books.

`Compaction` wraps the harness's strategy, which keeps its own trigger. That trigger already allows for
what every request carries besides the messages (instructions, tool schemas): from the second request
on it anchors on the input tokens the provider reported for the last response, so it fires when the
messages pass the trigger less that overhead; the first request, with nothing reported yet, triggers
on the messages alone. The wrapper measures the overhead on every response (reported input tokens less
the estimate of the message parts) and gives up for the rest of the run when the overhead alone is
past the trigger: no summary gets below it, and trying would cost a summary on every request. It says
so once in the chat (`RunFacts.notice`), with the pair that picks a `context_window` that works; and
while a summary is being written the chat says what is being summarized.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
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

from capabilities.context import BuildContext
from capabilities.registry import CapabilityDef

Notice = Callable[[str], None]


class CompactionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    strategy: Literal["summarize", "tiered", "clear_tool_results", "sliding_window"] = "summarize"
    """`summarize` keeps what older turns said; `tiered` clears old tool results first and summarizes only
    if that was not enough; `clear_tool_results` and `sliding_window` call no model and forget."""
    max_fraction: float = Field(default=0.9, ge=0.05, le=0.95)
    """Fraction of the model's context window at which compaction starts."""
    keep_messages: int = Field(default=20, ge=1, le=500)
    """Most recent messages that survive a summary or a window."""
    keep_tool_pairs: int = Field(default=3, ge=0, le=100)
    """Most recent tool calls that keep their results."""
    summary_prompt: str | None = None
    """What the summarizing model is told; must contain `{messages}`. Unset: the library's own."""
    context_window: int | None = Field(default=None, ge=1000)
    """Overrides the model's window (tokens) — what `max_fraction` is measured against."""
    fallback_context_window: int = Field(default=200_000, ge=1000)
    """The window assumed when the model's own cannot be resolved."""

    @field_validator("summary_prompt")
    @classmethod
    def _has_messages(cls, value: str | None) -> str | None:
        if value is not None and "{messages}" not in value:
            raise ValueError("must contain {messages}, where the conversation to summarize is inserted")
        return value


def build(context: BuildContext[CompactionConfig]) -> AbstractCapability[Any]:
    notice = context.run.notice
    return Compaction(wrapped=_strategy(context.config, notice), config=context.config, notice=notice)


def _strategy(config: CompactionConfig, notice: Notice | None) -> AbstractCapability[Any]:
    window: dict[str, Any] = {"context_window": config.context_window,
                              "fallback_context_window": config.fallback_context_window}
    prompt = {"summary_prompt": config.summary_prompt} if config.summary_prompt else {}
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


CAPABILITY = CapabilityDef(
    id="compaction", name="Context management", category="utility", tools=(), config=CompactionConfig, build=build,
    description="Trims a long run's message history before each request, so a run near the model's limit keeps "
                "working.")
