"""The tools and builder of `guardrails`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/guardrails/__init__.py`."""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, CombinedCapability
from pydantic_ai.messages import AgentStreamEvent, PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
from pydantic_ai_harness.guardrails import (
    GuardrailError,
    GuardrailResult,
    InputGuardrail,
    OutputGuardrail,
    ToolGuardrail,
    ToolResultInfo,
)
from pydantic_ai_harness.guardrails.detectors import (
    TextDetector,
    blocked_keywords,
    for_text,
    for_tool_result_text,
    redact_personal_data,
    redact_secrets,
)

from capabilities.guardrails import NOTICES, Edge, GuardrailsConfig
from capabilities.registry import RunRefused
from capabilities.run import BuildContext


class GuardrailBlocked(RunRefused, GuardrailError):
    """A keyword block: the run ends here, and the chat is told why in `notice`."""

    status = "guardrail_blocked"

    def __init__(self, edge: Edge, reason: str) -> None:
        super().__init__(f"{edge} blocked: {reason}", notice=NOTICES[edge], edge=edge)


def _blocker(edge: Edge, terms: list[str]) -> Callable[[object], GuardrailResult]:
    """A keyword match raises instead of returning `block`: a block ends the run rather than the step."""
    detect = blocked_keywords(terms)

    def guard(text: object) -> GuardrailResult:
        if isinstance(text, str) and (verdict := detect(text)).action == "block":
            raise GuardrailBlocked(edge, verdict.message or "blocked term")
        return GuardrailResult.allow()
    return guard


def _tool_result_guard(guards: Sequence[Callable[[ToolResultInfo], GuardrailResult]]
                       ) -> Callable[[ToolResultInfo], GuardrailResult]:
    """`ToolGuardrail` takes one result guard; this runs several in order, each over the last rewrite."""

    def guard(info: ToolResultInfo) -> GuardrailResult:
        current = info
        for check in guards:
            verdict = check(current)
            if verdict.action == "replace":
                current = replace(current, result=verdict.replacement)
        return GuardrailResult.allow() if current is info else GuardrailResult.replace(current.result)
    return guard


@dataclass
class HoldAnswerText(AbstractCapability[Any]):
    """Keeps the answer's text out of the live stream, so only the screened answer reaches the chat."""

    async def wrap_run_event_stream(self, ctx: RunContext[Any], *,
                                    stream: AsyncIterable[AgentStreamEvent]) -> AsyncIterable[AgentStreamEvent]:
        async for event in stream:
            if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                continue
            if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                continue
            yield event


def redactors(config: GuardrailsConfig, edge: Edge) -> list[TextDetector]:
    secrets, pii = config.redacts(edge)
    return [detector for on, detector in ((secrets, redact_secrets), (pii, redact_personal_data)) if on]


def build(context: BuildContext[GuardrailsConfig]) -> AbstractCapability[Any] | None:
    """One harness guardrail per configured edge; nothing at all when no edge is configured."""
    config = context.config
    parts: list[AbstractCapability[Any]] = []
    input_guards: list[Callable[[Any], Any]] = [*redactors(config, "input")]
    if terms := config.keywords("input"):
        input_guards.append(_blocker("input", terms))
    if input_guards:
        parts.append(InputGuardrail(guard=input_guards))
    output_guards = [for_text(detector, on_other="allow") for detector in redactors(config, "output")]
    if terms := config.keywords("output"):
        output_guards.append(_blocker("output", terms))
    if output_guards:
        parts += [OutputGuardrail(guard=output_guards), HoldAnswerText()]
    tool_guards = [for_tool_result_text(detector, on_other="allow") for detector in redactors(config, "tool")]
    if terms := config.keywords("tool"):
        block = _blocker("tool", terms)
        tool_guards.append(lambda info: block(info.result))
    if tool_guards:
        parts.append(ToolGuardrail(result_guard=_tool_result_guard(tool_guards)))
    return CombinedCapability(parts) if parts else None
