"""What `web_fetch` binds when the gateway starts: where the names it fetches are looked up, before the URL guard
checks their addresses."""

from __future__ import annotations

from dataclasses import dataclass

from capabilities.run import Deployment
from capabilities.run.url_guard import Resolver, system_resolver


@dataclass(frozen=True, slots=True, kw_only=True)
class WebFetchServices:
    resolver: Resolver = system_resolver


def bind(deployment: Deployment) -> WebFetchServices:
    return WebFetchServices(resolver=deployment.resolver)
