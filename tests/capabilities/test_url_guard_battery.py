"""63 URLs that must never be fetched, each one a real chat turn through the fake Telegram with no development
switch: loopback, RFC 1918, link-local and cloud metadata, every IPv6 form that carries an IPv4 address (mapped,
compatible, SIIT, NAT64, 6to4, Teredo), legacy IPv4 spellings, IDNA and percent-encoded hosts, and names the
gateway's resolver answers with a loopback address. A loopback listener the URLs point at counts every connection
it is offered: none may arrive."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from pydantic_ai import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart

from capabilities.run.url_guard import system_resolver
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import FAST, TelegramBot, ask, running_gateway
from tests.support.scripted import stepped

NAMES = {"loopback.guard.test": ["127.0.0.1"], "rebind.guard.test": ["93.184.215.14", "127.0.0.1"],
         "siit.guard.test": ["::ffff:0:7f00:1"], "private.guard.test": ["10.1.2.3"],
         "nat64.guard.test": ["64:ff9b::a9fe:a9fe"]}
"""What the gateway's resolver answers for the test's own names; every other name is looked up for real."""

BATTERY = [
    # loopback, in its plain spellings ("localhost" resolved for real)
    "http://127.0.0.1:{port}/", "http://localhost:{port}/", "http://LOCALHOST.:{port}/", "http://127.0.0.2:{port}/",
    "http://[::1]:{port}/", "http://0.0.0.0:{port}/", "http://[::]:{port}/", "http://[::1%25lo]:{port}/",
    # legacy IPv4 spellings inet_aton accepts
    "http://2130706433:{port}/", "http://0177.0.0.1:{port}/", "http://0x7f.1:{port}/", "http://127.1:{port}/",
    "http://0x7f000001:{port}/", "http://017700000001:{port}/", "http://127.0.1:{port}/", "http://0:{port}/",
    # percent-encoded, fullwidth and ideographic-dot hosts
    "http://%31%32%37.0.0.1:{port}/", "http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11:{port}/",
    "http://127\u30020\u30020\u30021:{port}/", "http://loc%61lhost:{port}/",
    # RFC 1918, unique-local, site-local, CGNAT
    "http://10.0.0.1:{port}/", "http://172.16.0.1:{port}/", "http://192.168.1.1:{port}/", "http://0x0a000001:{port}/",
    "http://[fd00::1]:{port}/", "http://[fec0::1]:{port}/", "http://100.64.0.1:{port}/",
    # link-local and cloud metadata
    "http://169.254.169.254/latest/meta-data/", "http://[fe80::1]:{port}/", "http://[fd00:ec2::254]/",
    "http://metadata.google.internal/", "http://2852039166/", "http://0xa9.0xfe.0xa9.0xfe/", "http://169.254.43518/",
    "http://100.100.100.200/", "http://168.63.129.16/",
    # IPv4-mapped and IPv4-compatible
    "http://[::ffff:127.0.0.1]:{port}/", "http://[::ffff:7f00:1]:{port}/", "http://[::ffff:169.254.169.254]/",
    "http://[::127.0.0.1]:{port}/", "http://[::a00:1]:{port}/",
    # SIIT (RFC 6145)
    "http://[::ffff:0:7f00:1]:{port}/", "http://[::ffff:0:a00:1]:{port}/", "http://[0:0:0:0:ffff:0:a9fe:a9fe]/",
    # NAT64: the well-known prefix and the local-use one at its /96 and /48 embeddings
    "http://[64:ff9b::7f00:1]:{port}/", "http://[64:ff9b::10.0.0.1]:{port}/", "http://[64:ff9b::169.254.169.254]/",
    "http://[64:ff9b:1::7f00:1]:{port}/", "http://[64:ff9b:1:7f00:0:100::]:{port}/",
    # 6to4 and Teredo (client 127.0.0.1 and 10.0.0.1, obfuscated)
    "http://[2002:7f00:1::]:{port}/", "http://[2002:a00:1::1]:{port}/",
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:{port}/", "http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/",
    # reserved, broadcast, multicast, documentation, benchmarking
    "http://240.0.0.1/", "http://255.255.255.255/", "http://224.0.0.1/", "http://[ff02::1]/", "http://192.0.2.1/",
    # names the gateway's resolver answers with an inside address (one of two, a SIIT form, a NAT64 one)
    "http://loopback.guard.test:{port}/", "http://rebind.guard.test:{port}/", "http://siit.guard.test:{port}/",
    "http://private.guard.test:{port}/", "http://nat64.guard.test/",
]


async def table_resolver(host: str) -> list[str]:
    return NAMES[host] if host in NAMES else await system_resolver(host)


class Listener:
    """Loopback sockets (IPv4 and IPv6, one port) that count every connection offered to them."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0

    def _accepted(self, _reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Listener]:
        ipv4 = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        self.port = ipv4.sockets[0].getsockname()[1]
        servers = [ipv4]
        with contextlib.suppress(OSError):  # a host without IPv6 loopback: those URLs have nowhere to go anyway
            servers.append(await asyncio.start_server(self._accepted, "::1", self.port))
        try:
            yield self
        finally:
            for server in servers:
                server.close()


def fetch_what_was_asked(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
    """Fetches the URL of the newest message once, then answers with what the fetch returned."""
    last_prompt = max(i for i, m in enumerate(messages) if isinstance(m, ModelRequest)
                      and any(isinstance(p, UserPromptPart) for p in m.parts))
    returned = [p for m in messages[last_prompt:] if isinstance(m, ModelRequest) for p in m.parts
                if isinstance(p, ToolReturnPart)]
    if returned:
        return f"fetch said: {returned[-1].content}"
    prompt = next(p for p in messages[last_prompt].parts if isinstance(p, UserPromptPart))
    url = re.search(r"fetch (\S+)", str(prompt.content))
    assert url is not None
    return "web_fetch", {"url": url.group(1)}, f"fetch-{last_prompt}"


def test_the_battery_holds_63_urls() -> None:
    assert len(BATTERY) == len(set(BATTERY)) == 63


async def test_every_url_of_the_battery_is_refused_in_a_chat_and_nothing_reaches_loopback(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot(binding={"rate_limit": None, "history_turns": 0}).register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    answers: dict[str, str] = {}
    async with Listener().open() as listener, running_gateway(
            telegram, [bot], database_url=sqlite_url, redis_url=None, model=stepped(fetch_what_was_asked),
            capabilities=[{"id": "web_fetch"}], tuning=replace(FAST, resolver=table_resolver)):
        for template in BATTERY:
            url = template.format(port=listener.port)
            answers[url] = await ask(telegram, bot, chat, alice, f"please fetch {url}")
    fetched = {url: answer for url, answer in answers.items()
               if "private, loopback, link-local, reserved or cloud-metadata address" not in answer}
    assert (fetched, listener.connections) == ({}, 0)
