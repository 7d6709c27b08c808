"""Pending approvals with their tool and arguments, decided from the browser where the binding lets the console
decide, and the recent decisions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from starlette.responses import RedirectResponse, Response

from gateway.approvals.parking import settled
from gateway.approvals.store import Approvals, console_refusal, readable
from gateway.pipeline.operator_decisions import OperatorDecision
from gateway.server.console.audit import ConsoleAudit
from gateway.server.console.gate import Visit
from gateway.server.console.render import Renderer

QueueDecision = Callable[[OperatorDecision, str, str], Awaitable[bool]]
"""Put a decision in the inbox for (bot, conversation); False: the same decision is queued already."""


class ApprovalsPage:
    def __init__(self, *, renderer: Renderer, approvals: Approvals, queue: QueueDecision, audit: ConsoleAudit,
                 base: str) -> None:
        self._render = renderer
        self._approvals = approvals
        self._queue = queue
        self._audit = audit
        self._base = base

    async def show(self, visit: Visit) -> Response:
        recent = await self._approvals.recent(limit=100)
        return self._render.page(visit, "approvals.html", pending=[a for a in recent if a.status == "pending"],
                                 decided=[a for a in recent if a.status != "pending"][:50], readable=readable,
                                 told=visit.request.query_params.get("told", ""))

    async def pending(self, visit: Visit) -> Response:
        """The pending cards alone, for htmx to refresh."""
        recent = await self._approvals.recent(limit=100)
        return self._render.page(visit, "_pending.html", pending=[a for a in recent if a.status == "pending"],
                                 readable=readable)

    async def decide(self, visit: Visit) -> Response:
        """The operator's Approve or Deny, checked here and queued in the inbox of the card's conversation, where a
        worker on any replica decides it by the compare-and-swap a click takes; audited whatever becomes of it."""
        approval_id = visit.request.path_params["approval_id"]
        form = await visit.request.form()
        verb = "approve" if form.get("verb") == "approve" else "deny"
        decision = OperatorDecision(approval_id=approval_id, verb=verb, operator=visit.operator.name)
        told = await self._queued(decision)
        await self._audit.record(visit.operator.name, f"{decision.verb} approval", f"{approval_id}: {told}")
        return RedirectResponse(f"{self._base}/approvals?{urlencode({'told': told})}", status_code=303)

    async def _queued(self, decision: OperatorDecision) -> str:
        approval = await self._approvals.get(decision.approval_id)
        refused = console_refusal(approval)
        if approval is None or refused is not None:
            return refused or "There is no such approval."
        if approval.status != "pending":
            return settled(approval)
        parked = await self._approvals.parked(approval.parked_run_id)
        if not await self._queue(decision, parked.bot_name, approval.conversation_key):
            return "That decision is on its way already."
        verb = "Approving" if decision.verb == "approve" else "Denying"
        return (f"{verb} {approval.tool_name} as {decision.decided_by}: the card in the chat will say so, and the run "
                "goes on.")
