"""The HTTP surface: platform webhooks, health and readiness."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from adapters.base import MalformedPayload, VerificationError
from adapters.protocols import Webhook, WebhookAnswer, WebhookRoute
from capabilities.registry import Registry
from gateway.pipeline.hooks import Hooks
from gateway.pipeline.intake import Intake
from gateway.pipeline.metrics import CONTENT_TYPE

log = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True, kw_only=True)
class Readiness:
    """What `/readyz` says. Only what leaves this replica unable to accept work takes it out (503): the database
    not answering, or bots configured and none signed in (no transport, no webhook it could verify). Redis not
    answering only degrades it (the in-process fallback serves), so it stays in rotation and says why; a bot that
    is not connected (a revoked token, say) is only reported, since the replica still serves every other bot."""

    checks: Mapping[str, bool]
    """Every dependency asked, by name: `database`, and `cache` (Redis) when one is configured."""
    essential: frozenset[str] = frozenset({"database"})
    """The checks this replica cannot serve without."""
    degraded: Mapping[str, str] = field(default_factory=dict)
    """What this replica serves without, by reason (`redis`), with what that costs."""
    bots: Mapping[str, bool]

    @property
    def ready(self) -> bool:
        transport = not self.bots or any(self.bots.values())
        return transport and all(self.checks.get(name, False) for name in self.essential)

    @property
    def status(self) -> str:
        return "unavailable" if not self.ready else "degraded" if self.degraded else "ok"

    def body(self) -> dict[str, object]:
        return {"ready": self.ready, "status": self.status, "degraded": dict(self.degraded),
                "checks": dict(self.checks), "bots": dict(self.bots)}


ReadinessCheck = Callable[[], Awaitable[Readiness]]
Scrape = Callable[[], Awaitable[bytes]]
"""The Prometheus exposition text as of now."""
WEBHOOK_ROUTES: tuple[tuple[str, WebhookRoute], ...] = (
    ("telegram", "webhook"),
    ("mattermost", "webhook"),  # the outgoing webhook; an answer's `text` tells the channel why the bot cannot answer
    ("mattermost", "actions"),  # button clicks; the card is updated once the click is decided, not in this answer
    ("slack", "events"),        # the Events API; the URL check gets its challenge back only once verified
    ("slack", "interactions"),  # button clicks
    ("slack", "commands"),      # slash commands; the answer is a message of its own, so the 200 is empty
    ("mattermost", "commands"), # custom slash commands, likewise
)
"""`POST /{platform}/{bot}/{route}`: each is verified by the bot's adapter before anything is read."""
MAX_BODY = 1024 * 1024
"""Bytes a webhook body may have: Slack, Telegram and Mattermost send a few kilobytes."""


HOOK_STATUS = {"accepted": 202, "duplicate": 202, "refused": 401, "unknown": 404, "unavailable": 503}
"""What a webhook that starts a run answers, by outcome: 202 only once the firing is committed."""


def build_http_app(*, intake: Intake, adapters: Mapping[str, Webhook], readiness: ReadinessCheck,
                   registry: Registry | None = None, metrics: Scrape | None = None,
                   console: Mount | None = None,
                   hooks: Hooks | None = None) -> Starlette:
    """Every route in one list, so the HTTP surface is read in one place. Plain Starlette: the surface has no
    request models to validate and no API documentation to serve. `console`: the operator console's routes
    (`gateway/server/console/`), mounted at its path."""

    async def capabilities(_request: Request) -> JSONResponse:
        """The registry as it stands in this deployment, each config with its JSON Schema."""
        return JSONResponse({"capabilities": registry.describe() if registry is not None else []})

    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(_request: Request) -> JSONResponse:
        answer = await readiness()
        return JSONResponse(answer.body(), status_code=200 if answer.ready else 503)

    routes: list[BaseRoute] = [
        Route("/api/v1/capabilities", capabilities, methods=["GET"]),
        *(Route(f"/{platform}/{{bot}}/{route}", _endpoint(intake, adapters, platform, route), methods=["POST"],
                name=f"{platform}_{route}") for platform, route in WEBHOOK_ROUTES),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
    ]
    if hooks is not None:
        async def hook(request: Request) -> Response:
            return await _hook(hooks, request.path_params["name"], request)
        routes.append(Route("/hooks/{name}", hook, methods=["POST"]))
    if metrics is not None:
        async def metrics_page(_request: Request) -> Response:
            return Response(await metrics(), media_type=CONTENT_TYPE)
        routes.append(Route("/metrics", metrics_page, methods=["GET"]))
    if console is not None:
        routes.append(console)
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})


async def _http_error(_request: Request, exc: Exception) -> Response:
    """An unknown path or method answered as JSON, `{"detail": …}`, with the status Starlette chose."""
    assert isinstance(exc, HTTPException)
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)


def _endpoint(intake: Intake, adapters: Mapping[str, Webhook], platform: str,
              route: WebhookRoute) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await _webhook(intake, adapters, platform, request.path_params["bot"], route, request)
    return endpoint


async def _webhook(intake: Intake, adapters: Mapping[str, Webhook], platform: str, bot: str, route: WebhookRoute,
                   request: Request) -> Response:
    """Verify the raw bytes, then read them, commit, and answer 2xx: the platform is acknowledged only for
    what is durable. Any body gets a 4xx or that 2xx; a verified body that cannot be read is kept as rejected."""
    adapter = adapters.get(bot)
    if adapter is None or adapter.platform != platform:
        log.warning("%s webhook call for unknown bot %r refused", platform, bot)
        return _error(404, f"unknown {platform} bot {bot!r}")
    if adapter.identity is None:
        return _error(503, f"{platform} bot {bot!r} is not connected yet; retry shortly")
    try:
        body = await _bounded_body(request)
    except BodyRefused as exc:
        log.warning("%s webhook call for bot %r refused: %s", platform, bot, exc)
        return _error(exc.status, str(exc))
    try:
        adapter.verify(route, request.headers, body)
    except VerificationError as exc:
        log.warning("%s webhook call for bot %r refused: %s", platform, bot, exc)
        return _error(403, str(exc))
    try:
        payload = await adapter.read_webhook(route, request.headers, body)
    except MalformedPayload as exc:
        await intake.reject(bot, body, str(exc))
        return JSONResponse({"ok": True, "outcome": "rejected"})
    except WebhookAnswer as answer:
        return JSONResponse(dict(answer.body))
    outcome = await intake.deliver(bot, payload)
    if (platform, route) == ("slack", "interactions"):
        return Response(status_code=200)  # an empty answer closes a submitted modal; a body would be read as an error
    if route == "commands":  # a body would be shown to the person as the command's answer
        return Response(status_code=200)
    return JSONResponse({"ok": True, "outcome": outcome})


async def _hook(hooks: Hooks, name: str, request: Request) -> Response:
    """Refused unless signed; the body is read no further than the hook's limit before that."""
    limit = hooks.limit(name)
    if limit is None:
        log.warning("call for unknown hook %r refused", name)
        return _error(404, f"unknown hook {name!r}")
    try:
        body = await _bounded_body(request, limit=limit)
    except BodyRefused as exc:
        log.warning("hook %r refused a call: %s", name, exc)
        return _error(exc.status, str(exc))
    answer = await hooks.deliver(name, request.headers, body)
    status = HOOK_STATUS[answer.outcome]
    if status >= 400:
        return _error(status, answer.reason)
    return JSONResponse({"ok": True, "outcome": answer.outcome}, status_code=status)


class BodyRefused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


async def _bounded_body(request: Request, *, limit: int = MAX_BODY) -> bytes:
    """The body, read no further than `limit` bytes. Raises `BodyRefused` (413, or 400 for a bad length)."""
    declared = request.headers.get("content-length")
    if declared is not None and not (declared.isascii() and declared.isdigit() and len(declared) <= 12):
        raise BodyRefused(400, "Content-Length is not a number")
    if declared is not None and int(declared) > limit:
        raise BodyRefused(413, f"body of {int(declared)} bytes is over the limit of {limit}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BodyRefused(413, f"body is over the limit of {limit} bytes")
    return bytes(body)


def _error(status: int, reason: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error": reason}, status_code=status)
