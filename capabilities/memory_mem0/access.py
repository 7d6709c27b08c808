"""A small async client for mem0, in both of its dialects, that sends the key to one vetted host only.

Not the official `mem0ai` client: its constructor makes a blocking `requests.get(host + "/v1/ping/")`
on the event loop, it reports usage to PostHog unless told not to, and it pulls in a vector-store stack
we never use. What we need is three calls:

| call     | cloud (api.mem0.ai, `Authorization: Token <key>`)   | self-hosted server (`X-API-Key: <key>`) |
|----------|-----------------------------------------------------|-----------------------------------------|
| remember | `POST /v1/memories/ {messages, user_id}`            | `POST /memories {messages, user_id}`    |
| recall   | `POST /v2/memories/search/ {query, filters, top_k}` | `POST /search {query, user_id, top_k}`  |
| forget   | `DELETE /v1/memories/?user_id=`                     | `DELETE /memories?user_id=`             |

The key travels in a header, so where it may travel is decided before any request: https only, a
self-hosted host must be listed in `MEM0_ALLOWED_HOSTS` (an empty list refuses self-hosting), and
redirects are never followed. Errors name the host and the status, never the key.

This module holds those rules, which the config schema and `gateway check` read; the client itself, which loads
an HTTP stack, is `capabilities/memory_mem0/client.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

CLOUD_URL = "https://api.mem0.ai"
Dialect = Literal["cloud", "self_hosted"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Mem0Access:
    """What the deployment decides about mem0, from its environment: the same for every agent."""

    deployment: str
    """The first part of every mem0 `user_id` (`GATEWAY_DEPLOYMENT`): two deployments never share memories."""
    allowed_hosts: frozenset[str] = frozenset()
    """`MEM0_ALLOWED_HOSTS`: the self-hosted mem0 servers a key may be sent to; empty refuses self-hosting."""
    ca_file: Path | None = None
    """`MEM0_CA_BUNDLE`: a PEM file of the CAs to trust for a self-hosted server (an internal CA); None: the
    system's."""


class Mem0Refused(Exception):
    """The call is not made, or mem0 said no in a way asking again will not change (a rejected key)."""


class Mem0Unavailable(Exception):
    """mem0 did not answer usefully (unreachable, a timeout, a 5xx, a redirect): asking again may help."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Memory:
    text: str
    score: float | None = None


def endpoint(base_url: str | None, access: Mem0Access) -> str:
    """The vetted base URL for a capability entry's `base_url`; raises `Mem0Refused` naming the rule it breaks."""
    if base_url is None:
        return CLOUD_URL
    problem = url_problem(base_url)
    if problem is not None:
        raise Mem0Refused(f"mem0 base_url {problem}")
    host = (urlsplit(base_url).hostname or "").lower()
    if not access.allowed_hosts:
        raise Mem0Refused(f"self-hosted mem0 at {host} is refused: MEM0_ALLOWED_HOSTS is empty, which allows "
                          "no self-hosted server; list the host there to allow it")
    if host not in access.allowed_hosts:
        raise Mem0Refused(f"self-hosted mem0 at {host} is refused: it is not listed in MEM0_ALLOWED_HOSTS "
                          f"({', '.join(sorted(access.allowed_hosts))})")
    return base_url.rstrip("/")


def url_problem(base_url: str) -> str | None:
    """Why `base_url` cannot carry a key, without repeating the URL (it may hold credentials); None: it can."""
    parts = urlsplit(base_url)
    if parts.scheme.lower() != "https" or not parts.hostname:
        return "is not an https URL with a host; the key is only sent over https"
    if parts.username or parts.password:
        return "carries credentials; leave them out and put the key in the entry's secret_id"
    return None


def allowed_hosts(value: str | None) -> frozenset[str]:
    """`MEM0_ALLOWED_HOSTS` as a set of lower-case host names (comma- or space-separated)."""
    return frozenset(h.strip().lower().rstrip(".") for h in (value or "").replace(",", " ").split() if h.strip())
