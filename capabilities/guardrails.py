"""`guardrails`: the harness's ready-made detectors at the three edges of a run.

Input (the user's prompt), output (the agent's answer) and tool result (what a tool returned,
before the model reads it) can each redact secrets and personal data, and block on keywords.
Redaction rewrites and the run goes on; a keyword block ends the run with an outcome of its own
(`GuardrailBlocked`, a `RunRefused`), which the runtime records apart from failures and answers in the chat.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
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

from capabilities.context import BuildContext
from capabilities.registry import CapabilityDef, RunRefused

Edge = Literal["input", "output", "tool"]
_SEPARATORS = re.compile(r"[,\n]")

NOTICES: dict[Edge, str] = {
    "input": "I can't work with that message: it contains a term this assistant is not allowed to handle.",
    "output": "I stopped before answering: the answer contained a term this assistant is not allowed to send.",
    "tool": "I stopped: a tool returned content with a term this assistant is not allowed to handle.",
}


class GuardrailBlocked(RunRefused, GuardrailError):
    """A keyword block: the run ends here, and the chat is told why in `notice`."""

    status = "guardrail_blocked"

    def __init__(self, edge: Edge, reason: str) -> None:
        super().__init__(f"{edge} blocked: {reason}", notice=NOTICES[edge], edge=edge)


class GuardrailsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    redact_secrets_in: bool = False
    """Remove API keys, tokens, JWTs and PEM blocks from the user's prompt."""
    redact_pii_in: bool = False
    """Remove email, IBAN (mod-97), card numbers (Luhn) and US SSNs from the user's prompt."""
    blocked_keywords_in: str = ""
    """Comma- or newline-separated terms; one in the user's prompt ends the run."""
    redact_secrets_out: bool = False
    """Remove API keys, tokens, JWTs and PEM blocks from the agent's answer."""
    redact_pii_out: bool = False
    """Remove email, IBAN, card numbers and US SSNs from the agent's answer."""
    blocked_keywords_out: str = ""
    """Comma- or newline-separated terms; one in the agent's answer ends the run."""
    redact_secrets_tool: bool = False
    """Remove API keys, tokens, JWTs and PEM blocks from what a tool returned, before the model reads it."""
    redact_pii_tool: bool = False
    """Remove email, IBAN, card numbers and US SSNs from what a tool returned, before the model reads it."""
    blocked_keywords_tool: str = ""
    """Comma- or newline-separated terms; one in what a tool returned ends the run."""

    def redactors(self, edge: Edge) -> list[TextDetector]:
        secrets, pii = (getattr(self, f"redact_{kind}_{_suffix(edge)}") for kind in ("secrets", "pii"))
        return [detector for on, detector in ((secrets, redact_secrets), (pii, redact_personal_data)) if on]

    def keywords(self, edge: Edge) -> list[str]:
        text: str = getattr(self, f"blocked_keywords_{_suffix(edge)}")
        return [term.strip() for term in _SEPARATORS.split(text) if term.strip()]


def _suffix(edge: Edge) -> str:
    return {"input": "in", "output": "out", "tool": "tool"}[edge]


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


def build(context: BuildContext[GuardrailsConfig]) -> AbstractCapability[Any] | None:
    """One harness guardrail per configured edge; nothing at all when no edge is configured."""
    config = context.config
    parts: list[AbstractCapability[Any]] = []
    input_guards: list[Callable[[Any], Any]] = [*config.redactors("input")]
    if terms := config.keywords("input"):
        input_guards.append(_blocker("input", terms))
    if input_guards:
        parts.append(InputGuardrail(guard=input_guards))
    output_guards = [for_text(detector, on_other="allow") for detector in config.redactors("output")]
    if terms := config.keywords("output"):
        output_guards.append(_blocker("output", terms))
    if output_guards:
        parts += [OutputGuardrail(guard=output_guards), HoldAnswerText()]
    tool_guards = [for_tool_result_text(detector, on_other="allow") for detector in config.redactors("tool")]
    if terms := config.keywords("tool"):
        block = _blocker("tool", terms)
        tool_guards.append(lambda info: block(info.result))
    if tool_guards:
        parts.append(ToolGuardrail(result_guard=_tool_result_guard(tool_guards)))
    return CombinedCapability(parts) if parts else None


CAPABILITY = CapabilityDef(
    id="guardrails", name="Guardrails", category="utility", tools=(), config=GuardrailsConfig, build=build,
    description="Redacts secrets and personal data, or blocks on keywords, in the prompt, the answer and "
                "tool results.")
