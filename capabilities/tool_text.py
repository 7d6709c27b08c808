"""What a tool tells the model, in the one shape pydantic-ai renders from a docstring.

A tool written here is a function whose Google docstring is its prompt: the framework renders the
summary into `<summary>`, the `Returns:` section into `<returns>`, and each `Args:` entry into the
argument's description. A tool from a library arrives with someone else's wording, so `ToolText`
renders ours in exactly that shape and `described` puts it on the library's toolset.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import FunctionToolset, RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset

from capabilities.failures import RETRY_BUDGET


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolText:
    summary: str
    """What the tool does in one sentence, then when to use it rather than its neighbours."""
    returns: str
    """The shape of the answer, where it is a truncated slice, and what a failure looks like."""
    args: Mapping[str, str] = field(default_factory=dict)
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
