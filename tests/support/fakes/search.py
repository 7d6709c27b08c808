"""Fake Tavily, Brave Search and Exa on one loopback port, speaking each service's own request and answer.

Tavily: `POST /search` with `Authorization: Bearer <key>` and `{"query", "max_results"}` → `{"results": [{"title",
"url", "content", "score"}]}`. Brave: `GET /res/v1/web/search?q=&count=` with `X-Subscription-Token` → `{"web":
{"results": [{"title", "url", "description"}]}}` (no `web` at all when nothing matched). Exa: `POST /search` with
`x-api-key` and `{"query", "numResults"}` → `{"results": [{"title", "url", "text"}]}`. A wrong key gets 401, as
the services answer (Brave: 422 `SUBSCRIPTION_TOKEN_INVALID`). Tavily and Exa share the path, so each is told
apart by its key header.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.loopback import serving


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    service: str
    query: str
    count: int
    headers: dict[str, str]
    body: dict[str, Any] | None


@dataclass
class FakeSearch:
    key: str = "fake-search-key-0123456789"
    hits: list[tuple[str, str, str]] = field(default_factory=lambda: [
        ("Pydantic AI", "https://ai.pydantic.dev/", "Agent framework for Python."),
        ("Release notes", "https://github.com/pydantic/pydantic-ai/releases", "What changed in 2.62."),
        ("Tutorial", "https://example.com/tutorial", "Build an agent step by step.")])
    """(title, url, snippet) answered to every query but `nothing`."""
    down: bool = False
    """Answer 503 to everything."""
    redirect_to: str | None = None
    """Answer every search with a 307 to this address instead."""
    seen: list[Seen] = field(default_factory=list)
    url: str = ""
    _server: AsyncExitStack = field(default_factory=AsyncExitStack)

    async def __aenter__(self) -> FakeSearch:
        app = web.Application()
        app.router.add_post("/search", self._post_search)
        app.router.add_get("/res/v1/web/search", self._brave)
        self.url = await self._server.enter_async_context(serving(app))
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._server.aclose()

    def _matches(self, query: str, count: int) -> list[tuple[str, str, str]]:
        return [] if query == "nothing" else self.hits[:count]

    async def _post_search(self, request: web.Request) -> web.Response:
        if self.redirect_to is not None:
            raise web.HTTPTemporaryRedirect(self.redirect_to)
        body = await request.json()
        if "x-api-key" in request.headers:
            return self._exa(request, body)
        return self._tavily(request, body)

    def _tavily(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        self.seen.append(Seen(service="tavily", query=body.get("query", ""), count=body.get("max_results", 5),
                              headers=dict(request.headers), body=body))
        if self.down:
            return web.json_response({"detail": {"error": "service unavailable"}}, status=503)
        if request.headers.get("Authorization") != f"Bearer {self.key}":
            echoed = request.headers.get("Authorization")  # as careless services do: our texts must not repeat it
            return web.json_response({"detail": {"error": f"Unauthorized: invalid API key {echoed}"}}, status=401)
        results = [{"title": t, "url": u, "content": s, "score": 0.9} for t, u, s in
                   self._matches(body["query"], body.get("max_results", 5))]
        return web.json_response({"query": body["query"], "answer": None, "images": [], "results": results,
                                  "response_time": 0.4})

    def _exa(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        self.seen.append(Seen(service="exa", query=body.get("query", ""), count=body.get("numResults", 10),
                              headers=dict(request.headers), body=body))
        if self.down:
            return web.json_response({"error": "unavailable"}, status=503)
        if request.headers.get("x-api-key") != self.key:
            return web.json_response({"error": "Invalid API key"}, status=401)
        results = [{"id": u, "title": t, "url": u, "text": s, "publishedDate": None, "author": None}
                   for t, u, s in self._matches(body["query"], body.get("numResults", 10))]
        return web.json_response({"requestId": "r1", "resolvedSearchType": "neural", "results": results})

    async def _brave(self, request: web.Request) -> web.Response:
        query, count = request.query.get("q", ""), int(request.query.get("count", "20"))
        self.seen.append(Seen(service="brave", query=query, count=count, headers=dict(request.headers), body=None))
        if self.down:
            return web.json_response({"type": "ErrorResponse"}, status=503)
        if request.headers.get("X-Subscription-Token") != self.key:
            return web.json_response({"type": "ErrorResponse", "error": {
                "code": "SUBSCRIPTION_TOKEN_INVALID", "status": 422,
                "detail": "The provided subscription token is invalid."}}, status=422)
        found = self._matches(query, count)
        answer: dict[str, Any] = {"type": "search", "query": {"original": query}}
        if found:
            answer["web"] = {"type": "search", "results": [{"title": t, "url": u, "description": s}
                                                           for t, u, s in found]}
        return web.json_response(answer)
