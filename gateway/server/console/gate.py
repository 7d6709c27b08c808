"""The console's door: sign-in (rate-limited, audited), sessions in HttpOnly SameSite cookies, and the CSRF check of
every form. Fails closed: a route answers only within a live session of an operator gateway.yaml still lists, and a
post only with its session's CSRF token."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from gateway.server.console.audit import ConsoleAudit
from gateway.server.console.operators import Operator, Operators
from gateway.server.console.sessions import ConsoleSession, ConsoleSessions
from storage.cache import Cache

SESSION_COOKIE = "console_session"
SIGN_IN_COOKIE = "console_sign_in"
"""The sign-in form's CSRF token, doubled in a cookie: there is no session yet to keep it."""
CSRF_FIELD = "csrf"
CSRF_HEADER = "X-CSRF-Token"
ATTEMPTS = 5
"""Sign-in attempts from one address, or for one name, in `WINDOW` seconds; more are refused without a check."""
WINDOW = 300.0
NAME_LIMIT = 64
"""Characters of a name worth counting attempts for: no operator's name is longer (`ConsoleOperator.name`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Visit:
    """A request inside a live session: who is signed in, with what roles, and the session's CSRF token."""

    request: Request
    operator: Operator
    session: ConsoleSession


Page = Callable[[Visit], Awaitable[Response]]


class Gate:
    def __init__(self, *, operators: Operators, sessions: ConsoleSessions, audit: ConsoleAudit, cache: Cache,
                 path: str, lasts: timedelta) -> None:
        self._operators = operators
        self._sessions = sessions
        self._audit = audit
        self._cache = cache
        self._path = path
        self._lasts = lasts

    def guarded(self, page: Page, *, role: str = "operator") -> Callable[[Request], Awaitable[Response]]:
        """`page` behind the session, the role and, for a post, the CSRF token."""
        async def endpoint(request: Request) -> Response:
            session = await self._sessions.find(request.cookies.get(SESSION_COOKIE))
            operator = self._operators.get(session.operator) if session is not None else None
            if session is None or operator is None:
                return self._refused(request)
            if request.method == "POST" and not session.accepts(await _csrf_of(request)):
                await self._audit.record(operator.name, "refused: no CSRF token",
                                         f"{request.method} {request.url.path}")
                return PlainTextResponse("This form has no valid CSRF token; reload the page and try again.", 403)
            if not operator.may(role):
                return PlainTextResponse(f"This needs the {role!r} role (console.operators[].roles).", 403)
            return await page(Visit(request=request, operator=operator, session=session))
        return endpoint

    def _refused(self, request: Request) -> Response:
        """A browser asking for a page goes to the sign-in form; anything else gets 401 and nothing more."""
        if request.method == "GET" and "hx-request" not in request.headers:
            return RedirectResponse(f"{self._path}/sign-in", status_code=303)
        return PlainTextResponse("Sign in first.", 401)

    def sign_in_token(self, request: Request) -> str:
        """The sign-in form's CSRF token: the cookie's, or a new one the response sets (`with_sign_in_cookie`)."""
        return request.cookies.get(SIGN_IN_COOKIE) or secrets.token_urlsafe(32)

    def with_sign_in_cookie(self, request: Request, response: Response, token: str) -> Response:
        response.set_cookie(SIGN_IN_COOKIE, token, max_age=3600, path=self._path, httponly=True, samesite="strict",
                            secure=_secure(request))
        return response

    async def sign_in(self, request: Request, name: str, password: str, token: str | None) -> Operator | str:
        """The operator these credentials sign in, or why not (each refusal audited)."""
        cookie = request.cookies.get(SIGN_IN_COOKIE)
        if not token or not cookie or not hmac.compare_digest(token.encode(), cookie.encode()):
            await self._audit.record(name or "?", "refused: no CSRF token", "sign-in")
            return "This form has no valid CSRF token; reload the page and try again."
        address = request.client.host if request.client else "?"
        name = name[:NAME_LIMIT]
        if (await self._cache.hit_rate_limit(f"console-sign-in:{address}", limit=ATTEMPTS, window=WINDOW)
                or await self._cache.hit_rate_limit(f"console-sign-in-name:{name}", limit=ATTEMPTS, window=WINDOW)):
            await self._audit.record(name or "?", "sign-in refused: too many attempts", address)
            return "Too many sign-in attempts; wait five minutes and try again."
        operator = await self._operators.verify(name, password)
        if operator is None:
            await self._audit.record(name or "?", "sign-in refused: wrong name or password", address)
            return "Wrong name or password."
        await self._audit.record(operator.name, "signed in", address)
        return operator

    async def open_session(self, request: Request, operator: Operator, response: Response) -> Response:
        token = await self._sessions.start(operator.name, lasts=self._lasts)
        response.set_cookie(SESSION_COOKIE, token, max_age=int(self._lasts.total_seconds()), path=self._path,
                            httponly=True, samesite="strict", secure=_secure(request))
        response.delete_cookie(SIGN_IN_COOKIE, path=self._path)
        return response

    async def close_session(self, visit: Visit, response: Response) -> Response:
        token = visit.request.cookies.get(SESSION_COOKIE)
        if token:
            await self._sessions.end(token)
        await self._audit.record(visit.operator.name, "signed out")
        response.delete_cookie(SESSION_COOKIE, path=self._path)
        return response


async def _csrf_of(request: Request) -> str | None:
    """The token a post carries: htmx sends it as a header, a plain form as a field."""
    header = request.headers.get(CSRF_HEADER)
    if header:
        return header
    form = await request.form()
    value = form.get(CSRF_FIELD)
    return value if isinstance(value, str) else None


def _secure(request: Request) -> bool:
    """Cookies are `Secure` except over plain HTTP to this machine itself (a browser on the same host, or a test):
    there no TLS is possible and nothing crosses a network."""
    if request.url.scheme == "https":
        return True
    try:
        return not ipaddress.ip_address(request.url.hostname or "").is_loopback
    except ValueError:
        return request.url.hostname != "localhost"
