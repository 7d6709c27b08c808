"""`compaction`: the harness's strategies for trimming a long run's history before each request.

Its reach is one run: between turns the history is rebuilt from the transcript as text, so what is
worth compacting is the long tool loop inside a single run. A summary runs on the run's own model
and the harness folds its usage into the run's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai_harness.compaction import (
    ClearToolResults,
    SlidingWindowCompaction,
    SummarizingCompaction,
    TieredCompaction,
)

from capabilities.registry import BuildContext, CapabilityDef


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


def build(context: BuildContext) -> AbstractCapability[Any]:
    config = context.config
    assert isinstance(config, CompactionConfig)
    window: dict[str, Any] = {"context_window": config.context_window,
                              "fallback_context_window": config.fallback_context_window}
    prompt = {"summary_prompt": config.summary_prompt} if config.summary_prompt else {}
    match config.strategy:
        case "summarize":
            return SummarizingCompaction(max_fraction=config.max_fraction, keep_messages=config.keep_messages,
                                         **prompt, **window)
        case "clear_tool_results":
            return ClearToolResults(max_fraction=config.max_fraction, keep_pairs=config.keep_tool_pairs, **window)
        case "sliding_window":
            return SlidingWindowCompaction(max_fraction=config.max_fraction, keep_messages=config.keep_messages,
                                           **window)
        case "tiered":
            tiers = [ClearToolResults(max_tokens=1, keep_pairs=config.keep_tool_pairs),
                     SummarizingCompaction(max_messages=1, keep_messages=config.keep_messages, **prompt)]
            return TieredCompaction(tiers=tiers, target_fraction=config.max_fraction, **window)


CAPABILITY = CapabilityDef(
    id="compaction", name="Context management", category="utility", tools=(), config=CompactionConfig, build=build,
    description="Trims a long run's message history before each request, so a run near the model's limit keeps "
                "working.")
