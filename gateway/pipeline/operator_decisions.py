"""A console operator's Approve or Deny, queued in the inbox as a click is: keyed by the card's conversation, so it is
decided in order with that conversation's turns, on whichever replica claims it, and retried after a crash.

The payload is the gateway's own (no platform sends it); only this module reads its keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from adapters.wire import is_object

KEY = "gateway_operator_decision"
"""The payload's one key: a platform's payload never has it at its top level."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorDecision:
    approval_id: str
    verb: Literal["approve", "deny"]
    operator: str
    """The console operator's name; the card says "<operator> (console)"."""

    @property
    def logical_id(self) -> str:
        """The same operator pressing the same button twice queues one decision; any other is a decision of its own,
        which the compare-and-swap turns away once one has won."""
        return f"console:{self.approval_id}:{self.verb}:{self.operator}"

    @property
    def decided_by(self) -> str:
        return f"{self.operator} (console)"

    def payload(self) -> dict[str, Any]:
        return {KEY: {"approval_id": self.approval_id, "verb": self.verb, "operator": self.operator}}


def operator_decision(payload: Mapping[str, Any]) -> OperatorDecision | None:
    """The decision an inbox payload holds, or None for any other payload (a platform's)."""
    fields = payload.get(KEY)
    if not is_object(fields):
        return None
    approval_id, verb, operator = fields.get("approval_id"), fields.get("verb"), fields.get("operator")
    if not (isinstance(approval_id, str) and isinstance(operator, str) and verb in ("approve", "deny")):
        return None
    return OperatorDecision(approval_id=approval_id, verb="approve" if verb == "approve" else "deny", operator=operator)
