"""`web_fetch` through an HTTP proxy (`HTTP_PROXY`): the proxy is asked to `CONNECT` to the address the guard
checked, an IPv6 one in brackets, never to a name it would resolve again; the page keeps its own name in the Host
header; a refused address never reaches the proxy. The proxy is a loopback fake that answers as the site."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import pytest_asyncio
from pydantic_ai import ModelRequest, ToolReturnPart

from capabilities import default_registry
from tests.support.capability_runs import assembled, binding_with, run
from tests.support.scripted import calls_then_answers

NAMES = {"public.guard.test": ["2606:4700::6810:84e5"], "loopback.guard.test": ["127.0.0.1"]}
PAGE = b"<html><head><title>Through the proxy</title></head><body><p>Proxied page.</p></body></html>"


async def table_resolver(host: str) -> list[str]:
    return NAMES[host]


@dataclass
class FakeProxy:
    """Answers `CONNECT` with 200, then answers the tunnelled request itself with `PAGE`."""

    port: int = 0
    heads: list[list[str]] = field(default_factory=list)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await self._head(reader)
            if head[0].startswith("CONNECT "):
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
                await self._head(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%b" % (len(PAGE), PAGE))
            await writer.drain()
        finally:
            writer.close()

    async def _head(self, reader: asyncio.StreamReader) -> list[str]:
        lines = (await reader.readuntil(b"\r\n\r\n")).decode().split("\r\n")[:-2]
        self.heads.append(lines)
        return lines


@pytest_asyncio.fixture
async def proxy(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeProxy]:
    fake = FakeProxy()
    server = await asyncio.start_server(fake._serve, "127.0.0.1", 0)
    fake.port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{fake.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    try:
        yield fake
    finally:
        server.close()


async def fetched(url: str) -> ToolReturnPart:
    binding = binding_with([{"id": "web_fetch"}])
    agent = assembled(binding, calls_then_answers(("web_fetch", {"url": url})), registry=default_registry(),
                      facts={"resolver": table_resolver})
    messages = (await run(agent, "read it", binding=binding)).all_messages()
    [part] = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
    return part


def header(head: list[str], name: str) -> str:
    return next(line.split(":", 1)[1].strip() for line in head[1:] if line.lower().startswith(f"{name.lower()}:"))


async def test_an_ipv6_literal_is_sent_to_the_proxy_in_brackets(proxy: FakeProxy) -> None:
    answer = await fetched("http://[2606:4700:4700::1111]/page")
    assert answer.content["title"] == "Through the proxy"
    connect, request = proxy.heads
    assert connect[0] == "CONNECT [2606:4700:4700::1111]:80 HTTP/1.1"
    assert header(connect, "Host") == "[2606:4700:4700::1111]:80"
    assert request[0] == "GET /page HTTP/1.1" and header(request, "Host") == "[2606:4700:4700::1111]"


async def test_a_name_reaches_the_proxy_as_the_address_the_guard_checked_and_keeps_its_host_header(
        proxy: FakeProxy) -> None:
    answer = await fetched("http://public.guard.test/page")
    assert answer.content["title"] == "Through the proxy"
    connect, request = proxy.heads
    assert connect[0] == "CONNECT [2606:4700::6810:84e5]:80 HTTP/1.1"
    assert header(request, "Host") == "public.guard.test"


async def test_a_refused_address_never_reaches_the_proxy(proxy: FakeProxy) -> None:
    for url in ("http://loopback.guard.test/", "http://[::ffff:0:7f00:1]/", "http://169.254.169.254/"):
        answer = await fetched(url)
        assert answer.outcome == "retried" and "cloud-metadata address" in str(answer.content)
    assert proxy.heads == []
