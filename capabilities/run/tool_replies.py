"""What a tool tells the model: its text, in the one shape pydantic-ai renders from a docstring, and its trouble.

A tool written here is a function whose Google docstring is its prompt: the framework renders the
summary into `<summary>`, the `Returns:` section into `<returns>`, and each `Args:` entry into the
argument's description. A tool from a library arrives with someone else's wording, so `ToolText`
renders ours in exactly that shape and `described` puts it on the library's toolset.

How a tool reports trouble is decided here too, between a retry prompt and text:

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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import FunctionToolset, ModelRetry, RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset

RETRY_BUDGET = 1
"""Retries one tool call may spend; toolsets here are built with `max_retries=RETRY_BUDGET`."""


def retry_or_text(ctx: RunContext[Any], message: str) -> str:
    """Raise a retry prompt while this call has budget left; on the last attempt, return `message`."""
    if ctx.retry < ctx.max_retries:
        raise ModelRetry(message)
    return message


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolText:
    summary: str
    """What the tool does in one sentence, then when to use it rather than its neighbours."""
    returns: str
    """The shape of the answer, where it is a truncated slice, and what a failure looks like."""
    args: Mapping[str, str] = field(default_factory=dict[str, str])
    """Argument descriptions to replace (meaning, default, ceiling); others keep the library's."""

    def render(self) -> str:
        """The description pydantic-ai builds from a docstring with a `Returns:` section."""
        return f"<summary>{self.summary}</summary>\n<returns>\n<description>{self.returns}</description>\n</returns>"

    def apply(self, tool_def: ToolDefinition) -> ToolDefinition:
        schema = tool_def.parameters_json_schema
        if self.args:
            properties = {name: {**spec, "description": self.args.get(name, spec.get("description"))}
                          for name, spec in schema.get("properties", {}).items()}
            schema = {**schema, "properties": properties}
        return replace(tool_def, description=self.render(), parameters_json_schema=schema)


def described(toolset: AbstractToolset[Any], texts: Mapping[str, ToolText]) -> AbstractToolset[Any]:
    """The library's toolset with our text on the tools named in `texts` (by the library's tool name)."""

    async def redescribe(_ctx: RunContext[Any], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return [texts[t.name].apply(t) if t.name in texts else t for t in tool_defs]

    return toolset.prepared(redescribe)


def function_toolset(tools: Sequence[Callable[..., Any]], *, toolset_id: str) -> FunctionToolset[Any]:
    """Our own tools: docstrings are prompts, every argument must be described, one retry per call."""
    return FunctionToolset(list(tools), id=toolset_id, docstring_format="google",
                           require_parameter_descriptions=True, max_retries=RETRY_BUDGET)
