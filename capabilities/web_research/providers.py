"""The search services behind `web_search`, each behind one small protocol: a query in, hits out.

Tavily, Brave and Exa are spoken to over their public HTTP APIs with httpx; DuckDuckGo goes through `ddgs`
(the library pydantic-ai's own DuckDuckGo tool uses), asked for DuckDuckGo's own results only, in a worker
thread since it blocks. A failure is a `SearchUnavailable` whose text names the service and what went wrong and
never carries the key, the request or the service's body: it reaches the model. Each HTTP service's address can
be moved by an environment variable (`GATEWAY_TAVILY_URL`, ...), and DuckDuckGo's traffic sent through a proxy
(`DDGS_PROXY`, read by ddgs) with a CA bundle to trust (`GATEWAY_DDGS_CA_FILE`): for a proxy an operator runs,
and for the tests' loopback fakes.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio.to_thread
import ddgs
import httpx
from ddgs.exceptions import DDGSException

from adapters.wire import is_object, objects_in

if TYPE_CHECKING:  # `ddgs.DDGS` is a lazy-loading proxy; the class it stands for is this one
    from ddgs.ddgs import DDGS

log = logging.getLogger(__name__)

TIMEOUT = httpx.Timeout(20.0, connect=5.0)
ENDPOINTS = {"tavily": ("GATEWAY_TAVILY_URL", "https://api.tavily.com"),
             "brave": ("GATEWAY_BRAVE_URL", "https://api.search.brave.com"),
             "exa": ("GATEWAY_EXA_URL", "https://api.exa.ai")}
"""Each HTTP service's environment variable and its public address."""
_NO_RESULTS = "No results found."
"""What `ddgs` raises with when every engine answered and none found anything."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit:
    title: str
    url: str
    snippet: str


class SearchUnavailable(Exception):
    """The service did not answer, or refused this deployment's key; the message is safe to show the model."""


class SearchProvider(Protocol):
    @property
    def label(self) -> str:
        """The service's name as a person reads it."""
        ...

    @property
    def no_hits_note(self) -> str:
        """Said after "no results" where the service answers a refusal the same way; "" elsewhere."""
        ...

    async def search(self, query: str, *, max_results: int) -> list[Hit]:
        """Up to `max_results` hits, best first; [] when there are none. Raises `SearchUnavailable`."""
        ...


def endpoint(service: str, environ: Mapping[str, str] | None = None) -> str:
    variable, default = ENDPOINTS[service]
    return ((environ if environ is not None else os.environ).get(variable) or default).rstrip("/")


def ddgs_client(environ: Mapping[str, str] | None = None) -> DDGS:
    """`ddgs` as this deployment runs it: through `DDGS_PROXY` when set, trusting `GATEWAY_DDGS_CA_FILE` when set."""
    env = environ if environ is not None else os.environ
    return ddgs.DDGS(  # pyright: ignore[reportUnknownMemberType] - ddgs types its lazy proxy as unknown
        proxy=env.get("DDGS_PROXY") or None, verify=env.get("GATEWAY_DDGS_CA_FILE") or True)


@dataclass(frozen=True, slots=True, kw_only=True)
class DuckDuckGo:
    client: DDGS = field(default_factory=ddgs_client)
    label: str = "DuckDuckGo"
    no_hits_note: str = (" DuckDuckGo answers an empty page both when nothing matches and when it is limiting "
                         "requests: if the query was an ordinary one, say that the search found nothing right now.")

    async def search(self, query: str, *, max_results: int) -> list[Hit]:
        try:
            found = await anyio.to_thread.run_sync(
                lambda: self.client.text(query, max_results=max_results, backend="duckduckgo"))
        except DDGSException as exc:
            if str(exc) == _NO_RESULTS:
                return []
            log.warning("DuckDuckGo search failed: %s: %s", type(exc).__name__, exc)
            raise SearchUnavailable(f"DuckDuckGo did not answer ({type(exc).__name__})") from None
        except Exception as exc:  # primp's own errors (an unreadable CA bundle, say) are no DDGSException
            log.warning("DuckDuckGo search could not start: %s: %s", type(exc).__name__, exc)
            raise SearchUnavailable(f"DuckDuckGo could not be asked ({type(exc).__name__})") from None
        return [Hit(title=str(item.get("title") or ""), url=str(item.get("href") or ""),
                    snippet=str(item.get("body") or "")) for item in found[:max_results] if item.get("href")]


@dataclass(frozen=True, slots=True, kw_only=True)
class _HttpService:
    """One JSON call to a keyed service; the key travels in a header of the service's own choosing."""

    key: str = field(repr=False)
    base_url: str
    label: str
    no_hits_note: str = ""

    async def _call(self, method: str, path: str, *, headers: dict[str, str], **request: Any) -> Any:
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as client:
                response = await client.request(method, self.base_url + path, headers=headers, **request)
        except httpx.HTTPError as exc:
            log.warning("%s search failed: %s", self.label, type(exc).__name__)
            raise SearchUnavailable(f"{self.label} did not answer ({type(exc).__name__})") from None
        if response.status_code in (401, 403) or _token_invalid(response):
            log.warning("%s refused this deployment's API key (HTTP %d)", self.label, response.status_code)
            raise SearchUnavailable(f"{self.label} refused this deployment's API key (HTTP {response.status_code}); "
                                    "the operator has to replace the key")
        if response.status_code != 200:
            log.warning("%s search answered HTTP %d", self.label, response.status_code)
            raise SearchUnavailable(f"{self.label} answered HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError:
            raise SearchUnavailable(f"{self.label} answered something that is not JSON") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class Tavily(_HttpService):
    label: str = "Tavily"

    async def search(self, query: str, *, max_results: int) -> list[Hit]:
        answer = await self._call("POST", "/search", headers={"Authorization": f"Bearer {self.key}"},
                                  json={"query": query, "max_results": max_results, "search_depth": "basic"})
        return [Hit(title=str(r.get("title") or ""), url=str(r["url"]), snippet=str(r.get("content") or ""))
                for r in _items(answer, "results") if r.get("url")][:max_results]


@dataclass(frozen=True, slots=True, kw_only=True)
class Brave(_HttpService):
    label: str = "Brave Search"

    async def search(self, query: str, *, max_results: int) -> list[Hit]:
        answer = await self._call("GET", "/res/v1/web/search", params={"q": query, "count": max_results},
                                  headers={"X-Subscription-Token": self.key, "Accept": "application/json"})
        web = answer.get("web") if is_object(answer) else None
        return [Hit(title=str(r.get("title") or ""), url=str(r["url"]), snippet=str(r.get("description") or ""))
                for r in _items(web, "results") if r.get("url")][:max_results]


@dataclass(frozen=True, slots=True, kw_only=True)
class Exa(_HttpService):
    label: str = "Exa"

    async def search(self, query: str, *, max_results: int) -> list[Hit]:
        answer = await self._call("POST", "/search", headers={"x-api-key": self.key},
                                  json={"query": query, "numResults": max_results,
                                        "contents": {"text": {"maxCharacters": 1000}}})
        return [Hit(title=str(r.get("title") or ""), url=str(r["url"]), snippet=str(r.get("text") or ""))
                for r in _items(answer, "results") if r.get("url")][:max_results]


def _token_invalid(response: httpx.Response) -> bool:
    """Brave answers an unknown subscription token with 422 and the code `SUBSCRIPTION_TOKEN_INVALID`."""
    if response.status_code != 422:
        return False
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return False
    return is_object(error) and error.get("code") == "SUBSCRIPTION_TOKEN_INVALID"


def _items(answer: Any, key: str) -> list[Mapping[str, Any]]:
    return objects_in(answer.get(key)) if is_object(answer) else []


def provider_for(method: str, key: str | None, environ: Mapping[str, str] | None = None) -> SearchProvider:
    """The provider for a method this deployment runs itself (not `native`); the paid ones need `key`."""
    if method == "duckduckgo":
        return DuckDuckGo(client=ddgs_client(environ))
    if key is None:
        raise ValueError(f"web search method {method!r} needs a key, and the entry resolved none")
    services = {"tavily": Tavily, "brave": Brave, "exa": Exa}
    return services[method](key=key, base_url=endpoint(method, environ))
