"""Reads one page for `web_fetch`: the GET, each redirect hop, the body bound, and the page as Markdown.

Every connection is made by `capabilities/run/guarded_http.py`, so every hop's address is checked where the socket
opens; the hops are followed here, one at a time, so the domain filters see each host too and no credential
travels (the request carries none). A page's scripts, styles and other text that is not content are dropped
before the HTML becomes Markdown: what a `<script>` says never reaches the model as if it were the page.

The conversion is pydantic-ai's (`_convert_html`, pinned with the library below 2.63): it carries the work
budgets that keep a hostile page from holding the event loop, which a second converter would have to copy.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urljoin

import anyio
import httpx2
from pydantic_ai import BinaryContent
from pydantic_ai._utils import is_text_like_media_type
from pydantic_ai.common_tools.web_fetch import (
    WebFetchResult,
    _convert_html,  # pyright: ignore[reportPrivateUsage] - pydantic-ai's own converter, as the docstring says
)

from capabilities.run.url_guard import Refused, canonical_host, check_literal, url_host

MAX_REDIRECTS = 10
MAX_BYTES = 50 * 1024 * 1024
ACCEPT = "text/markdown, text/html;q=0.9, */*;q=0.8"
_NOT_CONTENT = re.compile(r"<(script|style|noscript|template|iframe|object|embed|svg|math)(?=[\s/>])", re.IGNORECASE)
_CONVERSIONS = anyio.CapacityLimiter(4)
"""HTML conversion is CPU work in worker threads; the rest of the thread pool stays for other tools."""


class Unreadable(ValueError):
    """The page could not be read; the message is for the model."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DomainRules:
    allowed: Sequence[str] | None = None
    """Canonical hostnames (lower case, IDNA, no root dot); None: any."""
    blocked: Sequence[str] | None = None

    def check(self, host: str) -> None:
        name = canonical_host(host)
        if self.allowed is not None and name not in self.allowed:
            raise Unreadable(f"Domain {host!r} is not in the allowed domains list. Allowed: {list(self.allowed)}")
        if self.blocked is not None and name in self.blocked:
            raise Unreadable(f"Domain {host!r} is blocked.")


def without_non_content(html: str) -> str:
    """`html` without script, style and other non-content elements, their text included, in one pass.

    An element ends at its first `</name` the way an HTML parser ends a script; one left open runs to the end.
    """
    kept: list[str] = []
    position = 0
    while (opening := _NOT_CONTENT.search(html, position)) is not None:
        kept.append(html[position:opening.start()])
        closing = re.compile(rf"</{opening.group(1)}\s*>", re.IGNORECASE).search(html, opening.end())
        position = len(html) if closing is None else closing.end()
    kept.append(html[position:])
    return "".join(kept)


async def download(client: httpx2.AsyncClient, url: str, rules: DomainRules, *,
                   allow_private: bool = False) -> tuple[str, httpx2.Response, bytes]:
    """The final URL, its response and its body (at most `MAX_BYTES`), each hop checked."""
    for _ in range(MAX_REDIRECTS + 1):
        try:
            host = url_host(url)
        except ValueError as exc:
            raise Unreadable(f"Failed to fetch {url}: {exc}") from None
        check_literal(host, allow_private=allow_private)
        rules.check(host)
        async with client.stream("GET", url, headers={"Accept": ACCEPT, "Accept-Encoding": "identity, gzip"},
                                 follow_redirects=False) as response:
            if response.is_redirect and "location" in response.headers:
                url = urljoin(url, response.headers["location"])
                continue
            if response.status_code >= 400:
                raise Unreadable(f"Failed to fetch {url}: the server answered {response.status_code}")
            return url, response, await _bounded(response)
    raise Unreadable(f"Failed to fetch {url}: more than {MAX_REDIRECTS} redirects")


async def _bounded(response: httpx2.Response) -> bytes:
    """The body as sent, then decoded, each bounded: a few compressed bytes may not become gigabytes."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip", "x-gzip"):
        raise Unreadable(f"the server sent the page as {encoding!r}, which is not read here")
    body = bytearray()
    async for chunk in response.aiter_raw():
        body.extend(chunk)
        if len(body) > MAX_BYTES:
            raise _too_big()
    if encoding == "identity":
        return bytes(body)
    decoder = zlib.decompressobj(zlib.MAX_WBITS | 16)
    try:
        decoded = decoder.decompress(bytes(body), MAX_BYTES + 1)
    except zlib.error as exc:
        raise Unreadable(f"the page's gzip body is broken: {exc}") from None
    if len(decoded) > MAX_BYTES:
        raise _too_big()
    return decoded


def _too_big() -> Unreadable:
    return Unreadable(f"Download exceeds the maximum size of {MAX_BYTES} bytes.")


async def read_page(client: httpx2.AsyncClient, url: str, rules: DomainRules, max_chars: int, *,
                    allow_private: bool = False) -> WebFetchResult | BinaryContent:
    """The page at `url` as Markdown (a PDF or an image as the file); raises `Refused` or `Unreadable`."""
    try:
        final, response, body = await download(client, url, rules, allow_private=allow_private)
    except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
        raise Unreadable(f"Failed to fetch {url}: {type(exc).__name__}: {exc}") from exc
    media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type and not is_text_like_media_type(media_type):
        return BinaryContent(data=body, media_type=media_type)
    try:
        text = body.decode(response.encoding or "utf-8", errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    title, content = await _as_markdown(text, media_type)
    content = re.sub(r"\n{3,}", "\n\n", content).strip()
    if len(content) > max_chars:
        content = content[:max_chars] + "\n\n[Content truncated]"
    return WebFetchResult(url=final, title=title, content=content)


async def _as_markdown(text: str, media_type: str) -> tuple[str, str]:
    if media_type in ("", "text/html", "application/xhtml+xml"):
        try:
            return await anyio.to_thread.run_sync(_convert_html, without_non_content(text), limiter=_CONVERSIONS)
        except RecursionError:
            raise Unreadable("the HTML is nested too deeply to convert") from None
    if media_type == "application/json":
        try:
            return "", f"```json\n{json.dumps(json.loads(text), indent=2)}\n```"
        except (ValueError, RecursionError):
            return "", text
    return "", text


__all__ = ["DomainRules", "Refused", "Unreadable", "read_page", "without_non_content"]
