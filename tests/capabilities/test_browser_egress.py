"""`browse_web` hands the engine a guarded proxy for the task: an engine whose browser goes through it (as the
wire contract asks) reaches no loopback, private or metadata address in any spelling, by `CONNECT` or by an
absolute-form request, and nothing is connected; the same proxy carries traffic to an address the guard allows."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from capabilities import default_registry
from capabilities.browser_use.egress_proxy import guarded_proxy
from capabilities.browser_use.engine import BrowseRequest, BrowseResult, BrowseStep
from capabilities.run.url_guard import system_resolver
from gateway.agents.models import ModelResolver
from gateway.config.secrets import SecretSource
from tests.support.capability_runs import assemble, binding_with, deps_for, run_facts
from tests.support.loopback import counting_listener, serving
from tests.support.scripted import calls_then_answers

NAMES = {"intranet.guard.test": ["10.0.0.7"], "loopback.guard.test": ["127.0.0.1"]}


async def table_resolver(host: str) -> list[str]:
    return NAMES[host] if host in NAMES else await system_resolver(host)


async def through(proxy_url: str, head: str) -> str:
    """Sends `head` to the proxy as a browser would, and returns the status line it answers."""
    host, port = proxy_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(head.encode())
    await writer.drain()
    answer = (await reader.readline()).decode().strip()
    writer.close()
    return answer


@dataclass
class BrowserBehindProxy:
    """An engine whose browser tries each target through the task's proxy, as a page's links might lead it."""

    targets: list[str]
    answers: dict[str, str] = field(default_factory=dict)
    proxies: list[str | None] = field(default_factory=list)

    async def browse(self, request: BrowseRequest) -> BrowseResult:
        self.proxies.append(request.proxy)
        assert request.proxy is not None
        for target in self.targets:
            head = (f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n" if "://" not in target
                    else f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n")
            self.answers[target] = await through(request.proxy, head)
        return BrowseResult(text="looked around", steps=(BrowseStep(input_tokens=1, output_tokens=1),))



async def test_a_browser_behind_the_tasks_proxy_reaches_nothing_inside(caplog: pytest.LogCaptureFixture) -> None:
    async with counting_listener() as (port, connections):
        targets = [f"127.0.0.1:{port}", f"[::ffff:0:7f00:1]:{port}", f"2130706433:{port}", f"localhost:{port}",
                   f"loopback.guard.test:{port}", "169.254.169.254:80", "intranet.guard.test:443",
                   f"http://127.1:{port}/", f"http://[64:ff9b::7f00:1]:{port}/", "http://metadata.google.internal/"]
        engine = BrowserBehindProxy(targets=targets)
        binding = binding_with([{"id": "browser_use", "tool_approval": {"browse_web": "never"}}])
        model = calls_then_answers(("browse_web", {"task": "look around"}))
        models = ModelResolver({}, SecretSource(environ={}), fixed={"scripted": model})
        agent = assemble(binding, registry=default_registry(), models=models,
                         run=run_facts(binding, browser=engine, resolver=table_resolver))
        with caplog.at_level(logging.WARNING, logger="capabilities.browser_use"):
            await agent.agent.run("go", deps=deps_for(binding))
    assert engine.proxies[0] is not None and engine.proxies[0].startswith("http://127.0.0.1:")
    assert {target: answer for target, answer in engine.answers.items() if "403" not in answer} == {}
    assert connections == []
    assert "refused 10 addresses" in caplog.text


async def test_the_proxy_carries_a_tunnel_and_a_forwarded_request_to_an_allowed_address() -> None:
    app = web.Application()
    seen: list[str] = []

    async def page(request: web.Request) -> web.Response:
        seen.append(request.path_qs)
        return web.Response(text="hello")

    app.router.add_get("/page", page)
    async with serving(app) as base, guarded_proxy(table_resolver, allow_private=True) as (proxy_url, _proxy):
        port = base.rsplit(":", 1)[1]
        assert await through(proxy_url, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n") == \
            "HTTP/1.1 200 Connection established"
        forwarded = f"GET http://loopback.guard.test:{port}/page?x=1 HTTP/1.1\r\nHost: loopback.guard.test\r\n\r\n"
        assert await through(proxy_url, forwarded) == "HTTP/1.1 200 OK"
        assert await through(proxy_url, "CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n") == "HTTP/1.1 403 Forbidden"
    assert seen == ["/page?x=1"]
