"""An OpenAI-compatible model server's catalogue (`GET /v1/models`, `GET /v1/models/{id}`), on loopback.

The first path segment picks how the server behaves, so one server stands for several deployments:
`/ok/v1` answers as OpenAI does (401 `invalid_api_key` quoting the key's first and last characters as OpenAI's
message does, 404 `model_not_found`), `/broken/v1` answers 500 to everything, `/listing/v1` has only the list
(vLLM's shape: every lookup is a bare 404),
`/moved/…` redirects to `/ok/…`. Anything else is a wrong path: an empty 404.
No chat route exists: a doctor that spent tokens would get a 404 and the request would be recorded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import web

from tests.support.loopback import serving


@dataclass(kw_only=True)
class ModelCatalog:
    models: tuple[str, ...]
    key: str
    url: str = ""
    requests: list[str] = field(default_factory=list)
    """`METHOD path` of every request, in arrival order."""

    def base(self, behaviour: str) -> str:
        return f"{self.url}/{behaviour}/v1"

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ModelCatalog]:
        app = web.Application(middlewares=[self._recorded])
        app.router.add_get("/{behaviour:ok|broken}/v1/models/{model_id}", self._lookup)
        app.router.add_get("/{behaviour:ok|broken|listing}/v1/models", self._listing)
        app.router.add_get("/moved/{tail:.*}", self._moved)
        app.router.add_route("*", "/{tail:.*}", self._nowhere)
        async with serving(app) as url:
            self.url = url
            yield self

    @web.middleware
    async def _recorded(self, request: web.Request, handler: web.RequestHandler) -> web.StreamResponse:
        self.requests.append(f"{request.method} {request.path}")
        return await handler(request)

    def _refusal(self, request: web.Request) -> web.Response | None:
        if request.match_info["behaviour"] == "broken":
            return web.json_response({"error": {"message": "The server had an error while processing your request",
                                                "type": "server_error", "code": None}}, status=500)
        sent = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if sent == self.key:
            return None
        return web.json_response({"error": {"message": f"Incorrect API key provided: {sent[:6]}****{sent[-4:]}.",
                                            "type": "invalid_request_error", "code": "invalid_api_key"}}, status=401)

    async def _lookup(self, request: web.Request) -> web.Response:
        if refused := self._refusal(request):
            return refused
        model_id = request.match_info["model_id"]
        if model_id not in self.models:
            return web.json_response({"error": {
                "message": f"The model `{model_id}` does not exist or you do not have access to it.",
                "type": "invalid_request_error", "code": "model_not_found"}}, status=404)
        return web.json_response({"id": model_id, "object": "model", "created": 0, "owned_by": "local"})

    async def _listing(self, request: web.Request) -> web.Response:
        if refused := self._refusal(request):
            return refused
        return web.json_response({"object": "list", "data": [
            {"id": model_id, "object": "model", "created": 0, "owned_by": "local"} for model_id in self.models]})

    async def _moved(self, request: web.Request) -> web.Response:
        raise web.HTTPPermanentRedirect(f"{self.url}/ok/{request.match_info['tail']}")

    async def _nowhere(self, request: web.Request) -> web.Response:
        return web.Response(status=404)
