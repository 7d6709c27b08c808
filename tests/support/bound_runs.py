"""A scripted model that calls tools in turn and keeps what it was handed: the instructions, the tools offered,
and each tool's return, for the tests of the capabilities that bind resources by name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic_ai import ModelMessage, ModelRequest
from pydantic_ai.messages import RetryPromptPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.support.scripted import stepped_with_info


@dataclass
class Seen:
    """What the model received, request by request."""

    instructions: list[str | None] = field(default_factory=list)
    tools: list[set[str]] = field(default_factory=list)
    returns: list[str] = field(default_factory=list)
    """Each tool return the model was handed, in order."""
    retries: list[str] = field(default_factory=list)
    """Each retry prompt the model was handed, in order."""


def calling(calls: Sequence[tuple[str, dict[str, object]]], answer: str = "done") -> tuple[FunctionModel, Seen]:
    """Makes each call in turn, one per request, then answers `answer` followed by the last tool return."""
    seen = Seen()

    def step(messages: list[ModelMessage], info: AgentInfo) -> tuple[str, dict[str, object], str] | str:
        seen.instructions.append(info.instructions)
        seen.tools.append({tool.name for tool in info.function_tools})
        parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]
        returned = [p for p in parts if isinstance(p, ToolReturnPart)]
        seen.returns = [str(p.content) for p in returned if p.outcome != "retried"]
        seen.retries = [*(str(p.content) for p in returned if p.outcome == "retried"),
                        *(p.model_response() for p in parts if isinstance(p, RetryPromptPart))]
        answered = len(seen.returns) + len(seen.retries)
        if answered < len(calls):
            name, args = calls[answered]
            return name, args, f"call-{answered + 1}"
        return f"{answer} {seen.returns[-1] if seen.returns else ''}".strip()

    return stepped_with_info(step), seen
