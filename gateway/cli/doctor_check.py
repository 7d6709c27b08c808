"""One finding of `gateway doctor`, and how an HTTP answer that is not the expected API is told apart."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

import httpx

Status = Literal["ok", "warn", "fail"]
TIMEOUT = httpx.Timeout(10.0)
"""Per request: a sign-in or a model lookup answers in well under a second when the server is there."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    name: str
    """What was checked: `bot team-telegram (telegram)`, `model hosted`, `redis`."""
    status: Status
    reason: str
    fix: str | None = None
    """What to do about a warning or a failure, in the operator's terms (the variable to set, the URL to fix)."""

    def line(self) -> str:
        fix = f" — fix: {self.fix}" if self.fix else ""
        return f"{self.status.upper() if self.status != 'ok' else 'ok':<4}  {self.name}: {self.reason}{fix}"

    def fields(self) -> dict[str, Any]:
        return asdict(self)


def json_object(answer: httpx.Response) -> dict[str, Any] | None:
    """The answer's body as a JSON object; None for an empty, non-JSON or non-object body (a proxy's page)."""
    try:
        body = answer.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return body if isinstance(body, dict) else None


def not_the_api(url: str, answer: httpx.Response) -> str:
    """Why an answer shows `url` is not the API: `HTTP 404 with an empty body`."""
    kind = "an empty body" if not answer.content.strip() else (
        f"a {answer.headers.get('content-type', 'untyped').split(';')[0]} body, not JSON")
    return f"{url} answered HTTP {answer.status_code} with {kind}: wrong API URL or proxy path"


def server_error(answer: httpx.Response, said: str | None) -> str:
    detail = f": {said}" if said else ""
    return f"the server failed (HTTP {answer.status_code}{detail})"


def shorten(text: object, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else f"{line[:limit - 1]}…"
