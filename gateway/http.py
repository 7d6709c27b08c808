"""The HTTP surface: platform webhooks, health and readiness."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from adapters.base import Adapter, VerificationError
from gateway.intake import Intake

log = logging.getLogger(__name__)

ReadinessCheck = Callable[[], Awaitable[dict[str, bool]]]


def build_http_app(*, intake: Intake, adapters: Mapping[str, Adapter], readiness: ReadinessCheck) -> FastAPI:
    app = FastAPI(title="chat-gateway", docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/telegram/{bot}/webhook")
    async def telegram_webhook(bot: str, request: Request) -> JSONResponse:
        return await _webhook(intake, adapters, "telegram", bot, request)

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
                   request: Request) -> JSONResponse:
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
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        log.warning("%s webhook call for bot %r refused: body is not JSON", platform, bot)
        return _error(400, "body is not JSON")
    if not isinstance(payload, dict):
        return _error(400, "body is not a JSON object")
    outcome = await intake.deliver(bot, payload)
    return JSONResponse({"ok": True, "outcome": outcome})


def _error(status: int, reason: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error": reason}, status_code=status)
