"""The seam to the browser engine `browser_use` hands its tasks to, which runs outside this process.

browser-use pins pydantic, pydantic-settings and mcp below what this project needs, so it cannot be
installed beside the gateway. It runs as a small service in its own virtualenv instead, reached over
loopback (`GATEWAY_BROWSER_ENGINE=http://127.0.0.1:PORT`), and that service may itself drive a local
headless Chromium or attach over CDP to a remote one. The wire is one request:

    POST /browse   {"task", "mode", "cdp_url", "allowed_domains", "max_steps", "use_vision", "headless", "proxy"}
    200            {"result": "text", "steps": [{"input_tokens": N, "output_tokens": N}, ...]}
    4xx/5xx        {"error": "text"}

Each step is one request of the engine's model; the gateway books every step on the run's usage. `proxy` is the
gateway's guarded egress for this task (`capabilities/browser_use/egress_proxy.py`): the engine sends every
request of its browser through it, loopback included, and a refused address is answered 403.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

import httpx

INSTALL_LINE = ("python3 -m venv /opt/browser-engine && /opt/browser-engine/bin/pip install 'browser-use>=0.13,<0.14' "
                "&& /opt/browser-engine/bin/playwright install chromium; then run a service in that venv that speaks "
                "POST /browse (README, Browser automation) on loopback and set GATEWAY_BROWSER_ENGINE to its URL")


@dataclass(frozen=True, slots=True, kw_only=True)
class BrowseRequest:
    task: str
    mode: str
    cdp_url: str | None
    allowed_domains: Sequence[str] | None
    max_steps: int
    use_vision: bool
    headless: bool
    proxy: str | None = None
    """The URL of the gateway's guarded proxy the browser's traffic must go through."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrowseStep:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class BrowseResult:
    text: str
    steps: tuple[BrowseStep, ...]


class EngineFailed(Exception):
    """The engine could not be reached, or answered with an error; the message is safe to show."""


class BrowserEngine(Protocol):
    async def browse(self, request: BrowseRequest) -> BrowseResult: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpBrowserEngine:
    """The engine service at `url` (loopback; configured by the operator, so not SSRF-checked)."""

    url: str
    timeout: float = 600.0

    async def browse(self, request: BrowseRequest) -> BrowseResult:
        body = asdict(request)
        body["allowed_domains"] = list(request.allowed_domains) if request.allowed_domains is not None else None
        try:
            async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as client:
                response = await client.post(self.url.rstrip("/") + "/browse", json=body)
        except httpx.HTTPError as exc:
            raise EngineFailed(f"the browser engine did not answer ({type(exc).__name__})") from exc
        try:
            answer = response.json()
        except ValueError as exc:
            raise EngineFailed(f"the browser engine answered {response.status_code} with something other than "
                               "JSON") from exc
        if response.status_code != 200 or not isinstance(answer.get("result"), str):
            raise EngineFailed(f"the browser engine failed: {str(answer.get('error') or response.status_code)[:300]}")
        steps = tuple(BrowseStep(input_tokens=int(step.get("input_tokens", 0)),
                                 output_tokens=int(step.get("output_tokens", 0))) for step in answer.get("steps", []))
        return BrowseResult(text=answer["result"], steps=steps)
