"""Templates as package data, rendered with autoescaping; every page gets who is signed in and the CSRF token."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.responses import HTMLResponse

from gateway.server.console.gate import CSRF_FIELD, CSRF_HEADER, Visit


class Renderer:
    def __init__(self, *, path: str, allow_changes: bool) -> None:
        self._path = path
        self._allow_changes = allow_changes
        self._env = Environment(loader=PackageLoader("gateway.server.console", "templates"),
                                autoescape=select_autoescape(default=True), trim_blocks=True, lstrip_blocks=True)
        self._env.filters["usd"] = usd
        self._env.filters["when"] = lambda moment: "—" if moment is None else f"{moment:%Y-%m-%d %H:%M:%S}"

    def page(self, visit: Visit | None, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        """`visit` None: the sign-in page, outside any session."""
        shared = {"base": self._path, "csrf_field": CSRF_FIELD, "csrf_header": CSRF_HEADER,
                  "allow_changes": self._allow_changes,
                  "operator": visit.operator if visit else None,
                  "csrf": visit.session.csrf_token if visit else context.pop("csrf", "")}
        html = self._env.get_template(template).render(**shared, **context)
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                               "frame-ancestors 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
"""No frame can hold a console page (clickjacking), no script but the console's own runs, nothing is cached."""


def usd(value: Decimal | float | None) -> str:
    return "—" if value is None else f"${float(value):,.4f}"
