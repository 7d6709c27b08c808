"""`browser_use`: `browse_web` hands an open-ended web task to a browser agent that runs out of process.

The largest attack surface a capability opens: a browser follows what an untrusted page tells it, so the
tool is side-effecting (gated by default), the domains it may reach are the author's, its steps are
capped, and each step is booked on the run's usage, where the budget sees it. The engine is the seam in
`capabilities/browser_use/engine.py`; a deployment without one fails this tool, loudly, with the install line.

A `remote` `cdp_url` is a URL this deployment connects to, so it is checked by the URL guard's rule
(`capabilities/run/url_guard.py`) when the config is: here without DNS (any spelling of a loopback, private,
reserved or metadata address, or `localhost`), and by `gateway check` again after resolving the name
(`gateway/checks/browsing.py`), never on a run.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from capabilities.registry import CapabilityDef, Deferred, ToolInfo
from capabilities.run.url_guard import Address, Refused, literal_address, names_metadata, refused

MAX_TASK = 4_000
_DOMAIN = re.compile(r"^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})


def address_problem(address: Address) -> str | None:
    """Why the browser may not be pointed at `address` (the URL guard's rule), or None."""
    return f"resolves to {address}, a loopback, private, reserved or metadata address" if refused(address) else None


def cdp_url_problem(value: str) -> str | None:
    """What is wrong with a `cdp_url` without resolving it: its scheme, credentials, a literal internal host."""
    parts = urlsplit(value)
    if parts.scheme not in ("ws", "wss", "http", "https"):
        return "must be a ws://, wss://, http:// or https:// DevTools endpoint"
    if "@" in parts.netloc:
        return "must not carry credentials (user:pass@)"
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        return "names no host"
    try:
        address = literal_address(host)
    except Refused:
        return f"names {host!r}, which is neither an address nor a name"
    if address is not None:
        return address_problem(address)
    if host in _LOCAL_NAMES or host.endswith(".localhost") or names_metadata(host):
        return f"names {host!r}, which is this machine or a metadata service"
    return None


class BrowserUseConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    mode: Literal["playwright", "remote"] = "playwright"
    """`playwright`: the engine launches a headless Chromium; `remote`: it attaches over CDP to `cdp_url`."""
    cdp_url: str | None = None
    """A Chromium DevTools endpoint; required by, and only valid in, `remote`. Loopback and private addresses are
    refused."""
    allowed_domains: list[str] | None = None
    """Domains the browser may reach (`example.com`, `*.example.com`); null: unrestricted."""
    max_steps: int = Field(default=25, ge=1, le=100)
    """Steps per task, each one model request booked on the run."""
    use_vision: bool = True
    """Send screenshots of the page to the browser agent's model."""
    headless: bool = True
    """Run the launched browser without a window (`playwright` only)."""

    @field_validator("allowed_domains")
    @classmethod
    def _domains(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        bad = [domain for domain in value if not _DOMAIN.match(domain.lower())]
        if bad:
            raise ValueError(f"{', '.join(map(repr, bad))} is not a domain or a `*.domain` glob")
        if not value:
            raise ValueError("is empty, which would allow no page at all; list domains, or leave it null")
        return [domain.lower() for domain in value]

    @model_validator(mode="after")
    def _mode_fields(self) -> BrowserUseConfig:
        if self.mode == "remote":
            if self.cdp_url is None:
                raise ValueError("mode 'remote' needs cdp_url, the DevTools endpoint of the browser to attach to")
            problem = cdp_url_problem(self.cdp_url)
            if problem is not None:
                raise ValueError(f"cdp_url {problem}")
            if "headless" in self.model_fields_set:
                raise ValueError("headless applies to mode 'playwright' only; a remote browser is the operator's")
        elif self.cdp_url is not None:
            raise ValueError("cdp_url is only valid in mode 'remote'; remove it, or set mode: remote")
        return self


CAPABILITY = CapabilityDef(
    id="browser_use", name="Browser automation", category="research", config=BrowserUseConfig,
    build=Deferred("capabilities.browser_use.build:build"), bind=Deferred("capabilities.browser_use.services:bind"),
    scopes=frozenset({"web:browse"}),
    description="Hands an open-ended web task to a browser agent that drives a real Chromium (an optional engine).",
    tools=(ToolInfo(id="browse_web", summary="Hands a web task to an autonomous browser agent.", side_effecting=True),))
