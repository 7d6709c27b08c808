"""`guardrails`: the harness's ready-made detectors at the three edges of a run.

Input (the user's prompt), output (the agent's answer) and tool result (what a tool returned,
before the model reads it) can each redact secrets and personal data, and block on keywords.
Redaction rewrites and the run goes on; a keyword block ends the run with an outcome of its own
(`GuardrailBlocked`, a `RunRefused`), which the runtime records apart from failures and answers in the chat.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from capabilities.registry import CapabilityDef, Deferred

Edge = Literal["input", "output", "tool"]
_SEPARATORS = re.compile(r"[,\n]")
NOTICES: dict[Edge, str] = {
    "input": "I can't work with that message: it contains a term this assistant is not allowed to handle.",
    "output": "I stopped before answering: the answer contained a term this assistant is not allowed to send.",
    "tool": "I stopped: a tool returned content with a term this assistant is not allowed to handle.",
}


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

    def redacts(self, edge: Edge) -> tuple[bool, bool]:
        """Whether secrets, and personal data, are redacted at `edge`."""
        secrets, pii = (getattr(self, f"redact_{kind}_{_suffix(edge)}") for kind in ("secrets", "pii"))
        return secrets, pii

    def keywords(self, edge: Edge) -> list[str]:
        text: str = getattr(self, f"blocked_keywords_{_suffix(edge)}")
        return [term.strip() for term in _SEPARATORS.split(text) if term.strip()]


def _suffix(edge: Edge) -> str:
    return {"input": "in", "output": "out", "tool": "tool"}[edge]


CAPABILITY = CapabilityDef(
    id="guardrails", name="Guardrails", category="utility", tools=(), config=GuardrailsConfig,
    build=Deferred("capabilities.guardrails.build:build"),
    description="Redacts secrets and personal data, or blocks on keywords, in the prompt, the answer and "
                "tool results.")
