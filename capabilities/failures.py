"""How a tool reports trouble: the one place that decides between a retry prompt and text.

| The failure                                             | The tool                 |
|---------------------------------------------------------|--------------------------|
| the model's own arguments; a transient backend failure  | `retry_or_text(ctx, …)`  |
| bad news (nothing found, a room the bot cannot see)     | returns the text         |
| a refusal (a permission rule, an offer not made)        | returns the text         |

A retry prompt says what a correct call looks like; a result that is really an error would read as
"nothing found". Retries are budgeted: one attempt to correct itself per call, because a retry
raised past the budget ends the whole run. So the last attempt answers with its message instead of
raising, which is never worse than the answer the model would have given anyway.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import ModelRetry, RunContext

RETRY_BUDGET = 1
"""Retries one tool call may spend; toolsets here are built with `max_retries=RETRY_BUDGET`."""


def retry_or_text(ctx: RunContext[Any], message: str) -> str:
    """Raise a retry prompt while this call has budget left; on the last attempt, return `message`."""
    if ctx.retry < ctx.max_retries:
        raise ModelRetry(message)
    return message
