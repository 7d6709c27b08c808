"""What `gateway check` refuses about `browser_use`: a `remote` `cdp_url` whose name resolves inside the network.

The config class already refuses a literal internal address without DNS; a name is resolved here, once, when the
config is checked (never on a run, where resolving would block the event loop the run is assembled on).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from urllib.parse import urlsplit

from capabilities.browser_use import BrowserUseConfig, address_problem
from capabilities.run.url_guard import literal_address
from gateway.checks.entries import entries_of
from gateway.config.schema import GatewayConfig

Resolver = Callable[[str], list[str]]


def resolve(host: str) -> list[str]:
    """Every address `host` resolves to (empty when it does not resolve)."""
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None)})
    except OSError:
        return []


def browser_problems(config: GatewayConfig, *, resolver: Resolver = resolve) -> list[str]:
    problems: list[str] = []
    for i, j, settings in entries_of(config, "browser_use", BrowserUseConfig):
        if settings.mode != "remote" or settings.cdp_url is None:
            continue
        problem = _resolved_problem(urlsplit(settings.cdp_url).hostname or "", resolver)
        if problem is not None:
            problems.append(f"agents[{i}].capabilities[{j}].config.cdp_url: {problem}; point it at the "
                            "browser service's public address")
    return problems


def _resolved_problem(host: str, resolver: Resolver) -> str | None:
    addresses = resolver(host)
    if not addresses:
        return f"{host!r} does not resolve"
    for address in addresses:
        literal = literal_address(address)
        problem = address_problem(literal) if literal is not None else f"resolves to {address!r}, not an address"
        if problem is not None:
            return f"{host!r} {problem}"
    return None
