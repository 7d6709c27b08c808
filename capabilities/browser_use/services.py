"""What `browser_use` binds when the gateway starts: the out-of-process browser engine (`GATEWAY_BROWSER_ENGINE`),
and where the names its browser reaches are looked up."""

from __future__ import annotations

from dataclasses import dataclass

from capabilities.browser_use.engine import BrowserEngine, HttpBrowserEngine
from capabilities.run import Deployment
from capabilities.run.url_guard import Resolver, system_resolver


@dataclass(frozen=True, slots=True, kw_only=True)
class BrowserServices:
    engine: BrowserEngine | None
    """None: no engine installed here; the tool says so, with the line that installs one."""
    resolver: Resolver = system_resolver


def bind(deployment: Deployment) -> BrowserServices:
    url = deployment.settings.browser_engine_url
    return BrowserServices(engine=HttpBrowserEngine(url=url) if url else None, resolver=deployment.resolver)
