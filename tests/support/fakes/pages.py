"""A loopback web site for `web_fetch`: a page, a long page, a PDF, and redirects into cloud-metadata addresses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from aiohttp import web

from tests.support.loopback import serving

PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
PAGE = ("<html><head><title>Release notes</title><style>body { color: hidden-style }</style></head><body>"
        "<h1>Version 2</h1><p>Faster <a href='/more'>agents</a>.</p><script>steal()</script>"
        "<SCRIPT type='module'>exfiltrate()</SCRIPT ><noscript>enable-scripts</noscript>"
        "<template>hidden-template</template><p>End.</p><script>unclosed()</html>")


@dataclass
class FakePages:
    url: str = ""
    port: int = 0
    requested: list[str] = field(default_factory=list)
    _server: AsyncExitStack = field(default_factory=AsyncExitStack)

    async def __aenter__(self) -> FakePages:
        app = web.Application()
        app.router.add_get("/page", self._page)
        app.router.add_get("/long", self._long)
        app.router.add_get("/paper.pdf", self._pdf)
        app.router.add_get("/huge.pdf", self._huge)
        app.router.add_get("/to-metadata", self._redirect("http://169.254.169.254/latest/meta-data/iam/"))
        app.router.add_get("/to-mapped-metadata", self._redirect("http://[::ffff:169.254.169.254]/latest/"))
        url = await self._server.enter_async_context(serving(app))
        self.port = int(url.rsplit(":", 1)[1])
        self.url = f"http://localhost:{self.port}"
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._server.aclose()

    async def _page(self, request: web.Request) -> web.Response:
        self.requested.append(request.path)
        return web.Response(text=PAGE, content_type="text/html")

    async def _long(self, request: web.Request) -> web.Response:
        self.requested.append(request.path)
        body = "".join(f"<p>Paragraph {n} of a very long page, with some words in it.</p>" for n in range(600))
        return web.Response(text=f"<html><body>{body}</body></html>", content_type="text/html")

    async def _pdf(self, request: web.Request) -> web.Response:
        self.requested.append(request.path)
        return web.Response(body=PDF, content_type="application/pdf")

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        """60 MiB, streamed without a length: more than `web_fetch` reads (50 MiB)."""
        self.requested.append(request.path)
        response = web.StreamResponse(headers={"Content-Type": "application/pdf"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        chunk = b"0" * (1 << 20)
        try:
            for _ in range(60):
                await response.write(chunk)
        except ConnectionError:
            return response  # the reader stopped at its bound, which is the point
        await response.write_eof()
        return response

    def _redirect(self, target: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def redirect(request: web.Request) -> web.Response:
            self.requested.append(request.path)
            raise web.HTTPFound(target)
        return redirect
