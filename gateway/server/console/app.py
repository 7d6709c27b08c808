"""The console's routes in one list, each page behind the gate (session, role, CSRF), and the one object that
wires them from the gateway's parts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route

from capabilities.knowledge.store import KnowledgeStore
from capabilities.registry import Registry
from gateway.agents.bindings import BindingStore
from gateway.approvals.store import Approvals
from gateway.config.schema import GatewayConfig
from gateway.server.console.agents_page import AgentsPage, Describe
from gateway.server.console.approvals_page import ApprovalsPage, QueueDecision
from gateway.server.console.audit import ConsoleAudit
from gateway.server.console.gate import CSRF_FIELD, Gate, Visit
from gateway.server.console.knowledge_page import KnowledgePage
from gateway.server.console.operators import Operators
from gateway.server.console.pages import Backlog, Pages
from gateway.server.console.queries import ConsoleQueries
from gateway.server.console.render import Renderer
from gateway.server.console.replicas import Replicas
from gateway.server.console.sessions import ConsoleSessions
from gateway.server.http import ReadinessCheck
from storage.cache import Cache
from storage.db import Database

SIGN_IN_BODY = 4096
"""Bytes a sign-in form may have: a name, a password and a token."""
STATIC = {"htmx.min.js": "text/javascript"}
"""The console's own files: htmx, vendored (no CDN); its stylesheet is in the pages themselves."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsoleParts:
    """What the console reads and acts through, all built by `Gateway.start`."""

    config: GatewayConfig
    db: Database
    cache: Cache
    operators: Operators
    registry: Registry
    describe: Describe
    readiness: ReadinessCheck
    backlog: Backlog
    approvals: Approvals
    queue: QueueDecision
    bindings: BindingStore
    replicas: Replicas


def build_console(parts: ConsoleParts) -> Mount:
    """The console mounted at `console.path`: the sign-in form is the only page that answers without a session."""
    spec = parts.config.console
    base = spec.path
    audit = ConsoleAudit(parts.db)
    gate = Gate(operators=parts.operators, sessions=ConsoleSessions(parts.db), audit=audit, cache=parts.cache,
                path=base, lasts=timedelta(hours=spec.session_hours))
    render = Renderer(path=base, allow_changes=spec.allow_changes)
    pages = Pages(config=parts.config, renderer=render, queries=ConsoleQueries(parts.db), audit=audit,
                  replicas=parts.replicas, readiness=parts.readiness, backlog=parts.backlog)
    approvals = ApprovalsPage(renderer=render, approvals=parts.approvals, queue=parts.queue, audit=audit, base=base)
    agents = AgentsPage(renderer=render, db=parts.db, config=parts.config, registry=parts.registry,
                        describe=parts.describe, bindings=parts.bindings, audit=audit, allow_changes=spec.allow_changes)
    knowledge = KnowledgePage(renderer=render, store=KnowledgeStore(parts.db), config=parts.config, audit=audit,
                              base=base)
    door = SignIn(gate, render, base)
    guarded = gate.guarded
    return Mount(base, routes=[
        Route("/sign-in", door.form, methods=["GET"]),
        Route("/sign-in", door.submit, methods=["POST"]),
        Route("/sign-out", guarded(door.sign_out), methods=["POST"]),
        Route("/", guarded(pages.overview), methods=["GET"]),
        Route("/live/overview", guarded(pages.overview_live), methods=["GET"]),
        Route("/runs", guarded(pages.runs), methods=["GET"]),
        Route("/live/runs", guarded(pages.runs_live), methods=["GET"]),
        Route("/runs/{run_id:int}", guarded(pages.run), methods=["GET"]),
        Route("/approvals", guarded(approvals.show), methods=["GET"]),
        Route("/live/approvals", guarded(approvals.pending), methods=["GET"]),
        Route("/approvals/{approval_id}", guarded(approvals.decide, role="approver"), methods=["POST"]),
        Route("/agents", guarded(agents.show), methods=["GET"]),
        Route("/builder", guarded(agents.builder), methods=["GET"]),
        Route("/builder", guarded(agents.build), methods=["POST"]),
        Route("/knowledge", guarded(knowledge.show), methods=["GET"]),
        Route("/knowledge/upload", guarded(knowledge.upload), methods=["POST"]),
        Route("/knowledge/remove", guarded(knowledge.remove), methods=["POST"]),
        Route("/audit", guarded(pages.audit), methods=["GET"]),
        Route("/static/{name}", guarded(static), methods=["GET"]),
    ])


class SignIn:
    def __init__(self, gate: Gate, render: Renderer, base: str) -> None:
        self._gate = gate
        self._render = render
        self._base = base

    async def form(self, request: Request) -> Response:
        token = self._gate.sign_in_token(request)
        return self._gate.with_sign_in_cookie(request, self._render.page(None, "sign_in.html", csrf=token), token)

    async def submit(self, request: Request) -> Response:
        """The one post read without a session: its body is bounded by its declared length before it is read."""
        declared = request.headers.get("content-length", "")
        if not (declared.isascii() and declared.isdigit() and int(declared) <= SIGN_IN_BODY):
            return PlainTextResponse(f"A sign-in is a small form (at most {SIGN_IN_BODY} bytes, with its length).",
                                     status_code=413)
        form = await request.form()
        name, password, token = (form.get("name"), form.get("password"), form.get(CSRF_FIELD))
        signed = await self._gate.sign_in(request, name if isinstance(name, str) else "",
                                          password if isinstance(password, str) else "",
                                          token if isinstance(token, str) else None)
        if isinstance(signed, str):
            fresh = self._gate.sign_in_token(request)
            status = 429 if signed.startswith("Too many") else 401 if signed.startswith("Wrong") else 403
            page = self._render.page(None, "sign_in.html", status=status, csrf=fresh, error=signed)
            return self._gate.with_sign_in_cookie(request, page, fresh)
        return await self._gate.open_session(request, signed, RedirectResponse(f"{self._base}/", status_code=303))

    async def sign_out(self, visit: Visit) -> Response:
        return await self._gate.close_session(visit, RedirectResponse(f"{self._base}/sign-in", status_code=303))


async def static(visit: Visit) -> Response:
    name = visit.request.path_params["name"]
    if name not in STATIC:
        return Response("not found", status_code=404)
    body = files("gateway.server.console").joinpath("static", name).read_bytes()
    return Response(body, media_type=STATIC[name], headers={"Cache-Control": "private, max-age=3600"})
