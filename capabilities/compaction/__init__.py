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

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from capabilities.registry import CapabilityDef, Deferred


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


CAPABILITY = CapabilityDef(
    id="compaction", name="Context management", category="utility", tools=(), config=CompactionConfig,
    build=Deferred("capabilities.compaction.build:build"),
    description="Trims a long run's message history before each request, so a run near the model's limit keeps "
                "working.")
