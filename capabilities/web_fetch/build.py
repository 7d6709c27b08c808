"""The tools and builder of `web_fetch`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/web_fetch/__init__.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2
from pydantic_ai import BinaryContent, ModelRetry, RunContext, Tool
from pydantic_ai.capabilities import AbstractCapability, Capability, WebFetch
from pydantic_ai.common_tools.web_fetch import WebFetchResult

from capabilities.run import BuildContext
from capabilities.run.guarded_http import guarded_client
from capabilities.run.tool_replies import RETRY_BUDGET, function_toolset, retry_or_text
from capabilities.run.url_guard import REFUSAL, Refused, Resolver
from capabilities.web_fetch import (
    WebFetchConfig,
    spellings,
)
from capabilities.web_fetch.page_reader import DomainRules, Unreadable, read_page
from capabilities.web_fetch.services import WebFetchServices

TIMEOUT_SECONDS = 30


@dataclass(frozen=True, slots=True, kw_only=True)
class PageFetcher:
    config: WebFetchConfig
    resolver: Resolver
    allow_local: bool = False

    async def web_fetch(self, ctx: RunContext[Any], url: str) -> WebFetchResult | BinaryContent | str:
        """Read the full page at a URL, as Markdown; a PDF or an image arrives as the file itself.

        Use it to read a page you found with a search or that someone gave you; it does not search.
        Only public http(s) addresses can be read: private, loopback and cloud-metadata addresses
        are refused, and the agent's configuration may allow or block particular sites.

        Args:
            url: The full http or https URL of the page, e.g. `https://example.com/pricing`.

        Returns:
            For a web page: its `url`, `title` and `content` in Markdown, cut at the configured length
            with `[Content truncated]` at the end. For a PDF or an image: the file, for you to read.
            A refused or unreachable address fails with a message saying why; fetch another URL.
        """
        rules = DomainRules(allowed=self.config.allowed_domains, blocked=self.config.blocked_domains)
        try:
            async with guarded_client(self.resolver, allow_private=self.allow_local,
                                      timeout=httpx2.Timeout(TIMEOUT_SECONDS, connect=5)) as client:
                return await read_page(client, url, rules, self.config.max_content_chars,
                                       allow_private=self.allow_local)
        except Refused:
            return retry_or_text(ctx, f"Failed to fetch {url}: {REFUSAL}. Fetch a public URL instead.")
        except (Unreadable, ModelRetry) as exc:
            return retry_or_text(ctx, f"Failed to fetch {url}: {exc}" if isinstance(exc, ModelRetry) else str(exc))


def fetch_tool(config: WebFetchConfig, resolver: Resolver, *, allow_local: bool) -> Tool[Any]:
    fetcher = PageFetcher(config=config, resolver=resolver, allow_local=allow_local)
    return Tool(fetcher.web_fetch, name="web_fetch", docstring_format="google", require_parameter_descriptions=True,
                max_retries=RETRY_BUDGET)


def builder(*, allow_local: bool) -> Any:
    def build(context: BuildContext[WebFetchConfig]) -> AbstractCapability[Any]:
        resolver = context.bound(WebFetchServices).resolver
        config = context.config
        if config.method == "local":
            tool = fetch_tool(config, resolver, allow_local=allow_local)
            return Capability(toolsets=[function_toolset([tool.function], toolset_id="web_fetch")])
        domains: dict[str, Any] = {"allowed_domains": spellings(config.allowed_domains),
                   "blocked_domains": spellings(config.blocked_domains)}
        local = fetch_tool(config, resolver, allow_local=allow_local) if config.method == "auto" else None
        return WebFetch(native=True, local=local, **domains)
    return build


build = builder(allow_local=False)
build_local = builder(allow_local=True)
