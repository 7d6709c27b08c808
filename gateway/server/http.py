"""The HTTP surface: platform webhooks, health and readiness."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from adapters.base import Adapter, MalformedPayload, VerificationError
from adapters.mattermost.adapter import MattermostAdapter, NotInChannel
from adapters.slack.adapter import SlackAdapter, UrlVerification
from capabilities.registry import Registry
from gateway.pipeline.intake import Intake

log = logging.getLogger(__name__)

ReadinessCheck = Callable[[], Awaitable[dict[str, bool]]]
PayloadReader = Callable[[Adapter, Mapping[str, str], bytes], Awaitable[Mapping[str, Any]]]
"""Turns a verified webhook body into the payload `adapter.parse` reads; raises `MalformedPayload`."""


def build_http_app(*, intake: Intake, adapters: Mapping[str, Adapter], readiness: ReadinessCheck,
                   registry: Registry | None = None) -> FastAPI:
    """Every route in one list, so the HTTP surface is read in one place."""
    app = FastAPI(title="chat-gateway", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/api/v1/capabilities")
    async def capabilities() -> JSONResponse:
        """The registry as it stands in this deployment, each config with its JSON Schema."""
        return JSONResponse({"capabilities": registry.describe() if registry is not None else []})

    @app.post("/telegram/{bot}/webhook")
    async def telegram_webhook(bot: str, request: Request) -> JSONResponse:
        return await _webhook(intake, adapters, "telegram", bot, request)

    @app.post("/mattermost/{bot}/webhook")
    async def mattermost_webhook(bot: str, request: Request) -> JSONResponse:
        """Mattermost posts an answer's `text` in the channel: it tells people there why the bot cannot answer."""
        try:
            return await _webhook(intake, adapters, "mattermost", bot, request, read=_mattermost_event)
        except NotInChannel as exc:
            return JSONResponse({"text": str(exc)})

    @app.post("/mattermost/{bot}/actions")
    async def mattermost_actions(bot: str, request: Request) -> JSONResponse:
        """Approval button clicks; the card is updated once the click is decided, not in this answer."""
        return await _webhook(intake, adapters, "mattermost", bot, request, read=_mattermost_click)

    @app.post("/slack/{bot}/events")
    @app.post("/slack/{bot}/interactions")
    async def slack_events(bot: str, request: Request) -> JSONResponse:
        """Events API and interactivity (one verified reader for both bodies); the URL check gets its
        challenge back only once verified."""
        try:
            return await _webhook(intake, adapters, "slack", bot, request, read=_slack_event)
        except UrlVerification as exc:
            return JSONResponse({"challenge": exc.challenge})

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        checks = await readiness()
        return JSONResponse({"ready": all(checks.values()), "checks": checks},
                            status_code=200 if all(checks.values()) else 503)

    return app


async def _webhook(intake: Intake, adapters: Mapping[str, Adapter], platform: str, bot: str,
                   request: Request, *, read: PayloadReader | None = None) -> JSONResponse:
    """Verify, commit, then answer 2xx: the platform is acknowledged only for what is durable."""
    adapter = adapters.get(bot)
    if adapter is None or adapter.platform != platform:
        log.warning("%s webhook call for unknown bot %r refused", platform, bot)
        return _error(404, f"unknown {platform} bot {bot!r}")
    if adapter.identity is None:
        return _error(503, f"{platform} bot {bot!r} is not connected yet; retry shortly")
    body = await request.body()
    try:
        adapter.verify(request.headers, body)
    except VerificationError as exc:
        log.warning("%s webhook call for bot %r refused: %s", platform, bot, exc)
        return _error(403, str(exc))
    try:
        payload = await (read or _json_object)(adapter, request.headers, body)
    except MalformedPayload as exc:
        log.warning("%s webhook call for bot %r refused: %s", platform, bot, exc)
        return _error(400, str(exc))
    outcome = await intake.deliver(bot, payload)
    return JSONResponse({"ok": True, "outcome": outcome})


async def _json_object(_adapter: Adapter, _headers: Mapping[str, str], body: bytes) -> Mapping[str, Any]:
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise MalformedPayload("body is not JSON") from None
    if not isinstance(payload, dict):
        raise MalformedPayload("body is not a JSON object")
    return payload


async def _mattermost_event(adapter: Adapter, headers: Mapping[str, str], body: bytes) -> Mapping[str, Any]:
    """The outgoing webhook names a post; the adapter rebuilds the event stream's `posted` event for it."""
    assert isinstance(adapter, MattermostAdapter), "the route checked the platform"
    return await adapter.webhook_event(headers, body)


async def _mattermost_click(adapter: Adapter, headers: Mapping[str, str], body: bytes) -> Mapping[str, Any]:
    assert isinstance(adapter, MattermostAdapter), "the route checked the platform"
    return adapter.click_event(body)


async def _slack_event(adapter: Adapter, headers: Mapping[str, str], body: bytes) -> Mapping[str, Any]:
    """A JSON event or a form-encoded click, with the names of the people in it (Slack sends only ids)."""
    assert isinstance(adapter, SlackAdapter), "the route checked the platform"
    return await adapter.webhook_event(headers, body)


def _error(status: int, reason: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error": reason}, status_code=status)
