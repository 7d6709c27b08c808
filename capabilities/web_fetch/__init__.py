"""`web_fetch`: reads the page at a URL as Markdown, through the one URL guard (`capabilities/run/url_guard.py`).

Every connection the fetch makes, each redirect hop's included, goes to an address the guard resolved and
checked (`capabilities/run/guarded_http.py`), so no spelling of a private, loopback, link-local, reserved or
cloud-metadata address and no name resolving to one is reached; the page is read by
`capabilities/web_fetch/page_reader.py`. The domain filters only say which sites an agent may read; they match
hostnames exactly, so each entry is checked to be one that can match and kept in the one spelling DNS is asked
for, and every hop's host is compared in that spelling.

`native` has the model provider fetch, and `auto` lets the model profile decide: either way no approval gate
can hold the call, so asking for one is refused. Private and loopback addresses are reachable only in a registry
built with `allow_local` (`GATEWAY_DEV_WEB_FETCH_ALLOW_LOCAL`, for tests and development, reported by
`gateway check`); cloud metadata never is.
"""

from __future__ import annotations

import contextlib
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from capabilities.registry import CapabilityDef, Deferred, ToolInfo

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_NOT_IN_A_NAME = re.compile(r"[\s@?#\\]")


def canonical_host(entry: str) -> str:
    """`entry` in the one spelling DNS is asked for (lower case, no trailing dot, IDNA); ValueError for an entry
    that could never match a hostname, saying why."""
    name = entry.strip()
    if not name:
        raise ValueError("an empty entry matches no host; remove it")
    if "*" in name:
        raise ValueError(f"{entry!r} is a wildcard, and entries match one hostname exactly; list each host "
                         "(example.com, www.example.com)")
    if _SCHEME.match(name) and not re.match(r"^[^:]+:\d+$", name):
        raise ValueError(f"{entry!r} has a scheme; write the bare hostname, without http:// or https://")
    if "/" in name:
        raise ValueError(f"{entry!r} has a path; entries are bare hostnames and match whole sites")
    if ":" in name:
        raise ValueError(f"{entry!r} has a port (or is an IPv6 address); write the bare hostname, which matches "
                         "every port")
    if _NOT_IN_A_NAME.search(name):
        raise ValueError(f"{entry!r} is not a bare hostname")
    try:
        # Python's IDNA codec, the one pydantic-ai's filter compares in; it also folds case and odd dots.
        canonical = name.lower().rstrip(".").encode("idna").decode("ascii").rstrip(".").lower()
    except UnicodeError:
        raise ValueError(f"{entry!r} is not a hostname DNS could look up") from None
    if not canonical:
        raise ValueError(f"{entry!r} matches no host; remove it")
    return canonical


def spellings(hosts: list[str] | None) -> list[str] | None:
    """Every equivalent spelling of each canonical host (its IDNA A-label and its Unicode form), for the filter."""
    if hosts is None:
        return None
    found: dict[str, None] = {}
    for host in hosts:
        found[host] = None
        with contextlib.suppress(UnicodeError):
            found[host.encode("ascii").decode("idna")] = None
    return list(found)


Host = Annotated[str, AfterValidator(canonical_host)]


class WebFetchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    method: Literal["local", "native", "auto"] = "local"
    """Who fetches: `local` (this deployment, on every model), `native` (the model provider, on models that
    support it), `auto` (native where the model has it, local elsewhere)."""
    max_content_chars: int = Field(default=50_000, ge=1_000, le=200_000)
    """A page longer than this arrives cut here, marked as truncated; ignored by `native`."""
    allowed_domains: list[Host] | None = None
    """Bare hostnames the agent may fetch, matched exactly (no subdomains); null: any site."""
    blocked_domains: list[Host] | None = None
    """Bare hostnames the agent may never fetch, matched exactly; an empty list is read as unset."""

    @field_validator("allowed_domains")
    @classmethod
    def _allows_something(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("an empty allowlist refuses every site; list the hostnames the agent may read, or "
                             "remove allowed_domains to allow any")
        return None if value is None else list(dict.fromkeys(value))

    @field_validator("blocked_domains")
    @classmethod
    def _empty_is_unset(cls, value: list[str] | None) -> list[str] | None:
        return list(dict.fromkeys(value)) if value else None


def offered(config: WebFetchConfig) -> list[str]:
    """`native` offers the provider's tool, not a function; `auto` offers ours on a model without a native fetch."""
    return [] if config.method == "native" else ["web_fetch"]


def at_provider(config: WebFetchConfig) -> list[str]:
    """`auto` counts: which of the two runs is a property of the model profile and changes without a re-apply."""
    return [] if config.method == "local" else ["web_fetch"]


def capability(*, allow_local: bool = False) -> CapabilityDef[WebFetchConfig]:
    """`allow_local` lets the fetch reach private and loopback addresses (never cloud metadata): tests only."""
    return CapabilityDef(
        id="web_fetch", name="Web fetch", category="research",
        description="Reads the full page at a URL as Markdown (a PDF or an image as the file), refusing private, "
                    "loopback, link-local and cloud-metadata addresses.",
        tools=(ToolInfo(id="web_fetch", summary="Reads the full page at a URL, as Markdown."),),
        config=WebFetchConfig,
        build=Deferred(f"capabilities.web_fetch.build:{'build_local' if allow_local else 'build'}"),
        bind=Deferred("capabilities.web_fetch.services:bind"),
        offered=offered, at_provider=at_provider,
        scopes=frozenset({"web:fetch"}), stores_validated=True)


CAPABILITY = capability()
