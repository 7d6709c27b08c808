"""A browser engine on loopback speaking the gateway's `POST /browse`: it records each task and answers as told."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.loopback import serving


@dataclass
class FakeBrowserEngine:
    url: str = ""
    tasks: list[dict[str, Any]] = field(default_factory=list)
    result: str = "The price on example.com is 12 EUR."
    steps: int = 3
    status: int = 200

    async def browse(self, request: web.Request) -> web.Response:
        self.tasks.append(await request.json())
        if self.status != 200:
            return web.json_response({"error": "Chromium crashed"}, status=self.status)
        steps = [{"input_tokens": 100, "output_tokens": 10} for _ in range(self.steps)]
        return web.json_response({"result": self.result, "steps": steps})


@asynccontextmanager
async def running_browser_engine() -> AsyncIterator[FakeBrowserEngine]:
    engine = FakeBrowserEngine()
    app = web.Application()
    app.router.add_post("/browse", engine.browse)
    async with serving(app) as engine.url:
        yield engine
