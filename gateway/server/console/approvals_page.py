"""Pending approvals with their tool and arguments, decided from the browser where the binding lets the console
decide, and the recent decisions."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.responses import RedirectResponse, Response

from gateway.approvals.parking import ApprovalFlow
from gateway.approvals.store import Approvals, readable
from gateway.server.console.audit import ConsoleAudit
from gateway.server.console.gate import Visit
from gateway.server.console.render import Renderer


class ApprovalsPage:
    def __init__(self, *, renderer: Renderer, approvals: Approvals, flow: ApprovalFlow, audit: ConsoleAudit,
                 base: str) -> None:
        self._render = renderer
        self._approvals = approvals
        self._flow = flow
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
        """The operator's Approve or Deny: the same compare-and-swap as a click, audited whatever it decided."""
        approval_id = visit.request.path_params["approval_id"]
        form = await visit.request.form()
        verb = "approve" if form.get("verb") == "approve" else "deny"
        told = await self._flow.decide_from_console(approval_id, verb, visit.operator.name)
        await self._audit.record(visit.operator.name, f"{verb} approval", f"{approval_id}: {told}")
        return RedirectResponse(f"{self._base}/approvals?{urlencode({'told': told})}", status_code=303)
