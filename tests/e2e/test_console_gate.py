"""The console fails closed: every route refuses without a session, every form without its CSRF token, sign-in is
rate-limited, and every change and refused sign-in is audited."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from starlette.routing import Mount, Route

from gateway.server.app import Gateway
from gateway.server.errors import StartupError
from tests.support.console import PASSWORDS, console_section, csrf_in, hashes, signed_in
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import answers

PUBLIC = {("GET", "/sign-in"), ("POST", "/sign-in")}
"""The sign-in form and its post: the only console routes that answer without a session."""
EXAMPLE_PARAMS = {"run_id": "1", "approval_id": "abc", "name": "htmx.min.js"}


@asynccontextmanager
async def console_gateway(telegram: FakeTelegram, database_url: str, **changes: object) -> AsyncIterator[Gateway]:
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=answers("hi"),
                               top=console_section(**changes), secrets=hashes()) as gateway:
        yield gateway


def console_routes(gateway: Gateway) -> list[tuple[str, str]]:
    """(method, path) of every console route, its parameters filled with examples."""
    assert isinstance(gateway.console, Mount)
    found = []
    for route in gateway.console.routes:
        assert isinstance(route, Route)
        path = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: EXAMPLE_PARAMS[m.group(1)], route.path)
        found += [(method, path) for method in sorted(route.methods or ()) if method != "HEAD"]
    return found


async def test_every_console_route_refuses_without_a_session(telegram: FakeTelegram, sqlite_url: str) -> None:
    async with console_gateway(telegram, sqlite_url) as gateway, httpx.AsyncClient(base_url=gateway.url) as client, \
            httpx.AsyncClient(base_url=gateway.url, cookies={"console_session": "forged"}) as forger:
        routes = console_routes(gateway)
        assert len(routes) >= 15
        for method, path in routes:
            if (method, path) in PUBLIC:
                continue
            answer = await client.request(method, "/console" + path, data={"csrf": "x"})
            assert answer.status_code in (303, 401), (method, path, answer.status_code)
            if answer.status_code == 303:
                assert answer.headers["location"] == "/console/sign-in"
            assert "chat-gateway</strong>" not in answer.text and "htmx" not in answer.text, (method, path)
            answer = await forger.request(method, "/console" + path, headers={"HX-Request": "true"})
            assert answer.status_code in (303, 401), (method, path, "a forged session")


async def test_every_form_refuses_without_its_csrf_token(telegram: FakeTelegram, sqlite_url: str) -> None:
    async with console_gateway(telegram, sqlite_url) as gateway, httpx.AsyncClient(base_url=gateway.url) as client:
        token = await signed_in(client, "lead")
        posts = [path for method, path in console_routes(gateway) if method == "POST" and ("POST", path) not in PUBLIC]
        assert "/approvals/abc" in posts and "/builder" in posts and "/knowledge/upload" in posts
        for path in posts:
            for data in ({}, {"csrf": "not-the-token"}, {"csrf": token[:-1]}):
                answer = await client.post("/console" + path, data=data)
                assert answer.status_code == 403, (path, data, answer.status_code)
        assert (await client.get("/console/")).status_code == 200, "still signed in: sign-out refused it too"
        audit = (await client.get("/console/audit")).text
        assert audit.count("refused: no CSRF token") == 3 * len(posts)


async def test_the_sign_in_form_refuses_without_its_csrf_token(telegram: FakeTelegram, sqlite_url: str) -> None:
    async with console_gateway(telegram, sqlite_url) as gateway, httpx.AsyncClient(base_url=gateway.url) as client:
        answer = await client.post("/console/sign-in", data={"name": "ops", "password": PASSWORDS["ops"]})
        assert answer.status_code == 403 and "console_session" not in answer.cookies
        form = await client.get("/console/sign-in")
        answer = await client.post("/console/sign-in", data={"name": "ops", "password": PASSWORDS["ops"],
                                                             "csrf": "forged"})
        assert answer.status_code == 403
        client.cookies.clear()  # a token without its cookie: another site's form
        answer = await client.post("/console/sign-in", data={"name": "ops", "password": PASSWORDS["ops"],
                                                             "csrf": csrf_in(form.text)})
        assert answer.status_code == 403


async def test_a_sign_in_body_is_bounded_before_it_is_read(telegram: FakeTelegram, sqlite_url: str) -> None:
    async with console_gateway(telegram, sqlite_url) as gateway, httpx.AsyncClient(base_url=gateway.url) as client:
        form = await client.get("/console/sign-in")
        answer = await client.post("/console/sign-in", data={"name": "ops", "password": "x" * 10_000,
                                                             "csrf": csrf_in(form.text)})
        assert answer.status_code == 413

        async def chunked() -> AsyncIterator[bytes]:
            yield b"name=ops&password=x"
        answer = await client.post("/console/sign-in", content=chunked(),
                                   headers={"content-type": "application/x-www-form-urlencoded"})
        assert answer.status_code == 413, "a body without its length is not read"


async def test_sessions_are_httponly_samesite_cookies_ended_by_signing_out(telegram: FakeTelegram,
                                                                           sqlite_url: str) -> None:
    async with console_gateway(telegram, sqlite_url) as gateway, httpx.AsyncClient(base_url=gateway.url) as client:
        form = await client.get("/console/sign-in")
        answer = await client.post("/console/sign-in", data={"name": "ops", "password": PASSWORDS["ops"],
                                                             "csrf": csrf_in(form.text)})
        cookie = next(value for value in answer.headers.get_list("set-cookie") if value.startswith("console_session="))
        assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower() and "Path=/console" in cookie
        token = csrf_in((await client.get("/console/")).text)
        stolen = client.cookies.get("console_session")
        assert (await client.post("/console/sign-out", data={"csrf": token})).status_code == 303
        client.cookies.set("console_session", stolen or "", path="/console")
        answer = await client.get("/console/")
        assert answer.status_code == 303, "a signed-out session is over on the server, not only in the browser"


async def test_sign_in_is_rate_limited_and_refusals_are_audited(telegram: FakeTelegram, sqlite_url: str) -> None:
    async with console_gateway(telegram, sqlite_url) as gateway, httpx.AsyncClient(base_url=gateway.url) as client:
        statuses = []
        for _ in range(6):
            form = await client.get("/console/sign-in")
            answer = await client.post("/console/sign-in", data={"name": "ops", "password": "guess",
                                                                 "csrf": csrf_in(form.text)})
            statuses.append(answer.status_code)
        assert statuses == [401] * 5 + [429]
        form = await client.get("/console/sign-in")
        answer = await client.post("/console/sign-in", data={"name": "ops", "password": PASSWORDS["ops"],
                                                             "csrf": csrf_in(form.text)})
        assert answer.status_code == 429, "past the limit even the right password waits"
    async with console_gateway(telegram, sqlite_url) as gateway, httpx.AsyncClient(base_url=gateway.url) as client:
        await signed_in(client, "lead")
        audit = (await client.get("/console/audit")).text
        assert audit.count("sign-in refused: wrong name or password") == 5
        assert "sign-in refused: too many attempts" in audit and "signed in" in audit


async def test_a_missing_password_hash_stops_the_start(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    with pytest.raises(StartupError, match=r"console.operators\[1\].password_hash: CONSOLE_LEAD_HASH is not set"):
        async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=answers("hi"),
                                   top=console_section(),
                                   secrets={"CONSOLE_OPS_HASH": hashes()["CONSOLE_OPS_HASH"]}):
            pass


async def test_no_page_can_be_framed_run_foreign_script_or_be_cached(telegram: FakeTelegram, sqlite_url: str) -> None:
    async with console_gateway(telegram, sqlite_url) as gateway, httpx.AsyncClient(base_url=gateway.url) as client:
        await signed_in(client, "ops")
        for path in ("/console/sign-in", "/console/", "/console/runs", "/console/builder"):
            headers = (await client.get(path)).headers
            assert "frame-ancestors 'none'" in headers["content-security-policy"]
            assert "default-src 'self'" in headers["content-security-policy"]
            assert headers["x-frame-options"] == "DENY" and headers["cache-control"] == "no-store"


async def test_roles_decide_what_an_operator_sees_and_does(telegram: FakeTelegram, sqlite_url: str) -> None:
    async with console_gateway(telegram, sqlite_url) as gateway, httpx.AsyncClient(base_url=gateway.url) as client:
        token = await signed_in(client, "ops")
        answer = await client.post("/console/approvals/abc", data={"csrf": token, "verb": "approve"})
        assert answer.status_code == 403 and "approver" in answer.text


async def test_the_console_is_off_unless_enabled(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=answers("hi")) as gateway, httpx.AsyncClient(base_url=gateway.url) as client:
        assert gateway.console is None
        assert (await client.get("/console/sign-in")).status_code == 404
