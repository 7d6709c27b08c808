"""An HTTP client whose every connection goes to an address `capabilities/run/url_guard.py` checked.

The check sits in the network backend, under the connection pool: httpcore asks it for a TCP stream to a host,
and it resolves the host once, checks every address, and opens the stream to a checked one. Whatever the client
above does (a redirect, a new connection in a pool, an MCP session's second request) meets the same guard, and the
Host header, TLS SNI and certificate check keep the name the URL gave, because httpcore never learns the address.

Through a proxy (`HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY`, with `NO_PROXY`; `http://` proxies), the stream is a
`CONNECT` tunnel to the checked address, never to the name, so the proxy has nothing to resolve, and an IPv6
address goes in brackets (`CONNECT [2001:db8::1]:443`, RFC 9110 section 9.3.6): httpcore's own proxy support
would send the name, or an IPv6 literal without brackets. httpx 0.28 takes no network backend, so the transport
puts a pool of its own under `AsyncHTTPTransport`'s request handling.
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import ssl
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

import httpcore2
import httpx2
from httpcore2 import AsyncNetworkBackend, AsyncNetworkStream

from capabilities.run.url_guard import Address, Resolver, checked_addresses

_HEAD_LIMIT = 16_384


def _authority(address: Address, port: int) -> bytes:
    host = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
    return f"{host}:{port}".encode("ascii")


class GuardedBackend(AsyncNetworkBackend):
    """Opens TCP streams only to checked addresses, directly or through an `http://` proxy's `CONNECT`."""

    def __init__(self, resolver: Resolver, *, proxy: str | None = None, trusted: Iterable[str] = (),
                 allow_private: bool = False) -> None:
        self._resolver = resolver
        self._proxy = urlsplit(proxy) if proxy else None
        self._trusted = frozenset(host.lower() for host in trusted)
        self._allow_private = allow_private
        # httpcore2 also declares a method-less stand-in `AnyIOBackend` for when anyio is missing, and pyright
        # reads that one; anyio is a dependency, so this is the real backend.
        self._inner: AsyncNetworkBackend = httpcore2.AnyIOBackend()  # pyright: ignore[reportAttributeAccessIssue]

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,  # noqa: ASYNC109 - httpcore's
                          local_address: str | None = None,  # signature, which passes its connect timeout here
                          socket_options: Iterable[Any] | None = None) -> AsyncNetworkStream:
        try:
            addresses = await checked_addresses(host, self._resolver, trusted=self._trusts(host))
        except OSError as exc:
            raise httpcore2.ConnectError(str(exc)) from exc
        options: dict[str, Any] = {"timeout": timeout, "local_address": local_address, "socket_options": socket_options}
        if self._proxy is not None and not urllib.request.proxy_bypass(host):
            return await self._tunnel(addresses[0], port, options)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(str(address), port, **options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    def _trusts(self, host: str) -> bool:
        return self._allow_private or host.lower() in self._trusted

    async def _tunnel(self, address: Address, port: int, options: dict[str, Any]) -> AsyncNetworkStream:
        assert self._proxy is not None
        if self._proxy.scheme != "http" or not self._proxy.hostname:
            raise httpcore2.ProxyError(f"only http:// proxies are supported, not {self._proxy.scheme}://")
        stream = await self._inner.connect_tcp(self._proxy.hostname, self._proxy.port or 80, **options)
        target = _authority(address, port)
        head = b"CONNECT %b HTTP/1.1\r\nHost: %b\r\n" % (target, target)
        if self._proxy.username is not None:
            credentials = f"{unquote(self._proxy.username)}:{unquote(self._proxy.password or '')}"
            head += b"Proxy-Authorization: Basic %b\r\n" % base64.b64encode(credentials.encode())
        await stream.write(head + b"\r\n", timeout=options["timeout"])
        status = await _answer(stream, options["timeout"])
        if not 200 <= status < 300:
            await stream.aclose()
            raise httpcore2.ProxyError(f"the proxy answered CONNECT with {status}")
        return stream

    async def connect_unix_socket(self, path: str, timeout: float | None = None,  # noqa: ASYNC109 - httpcore's
                                  socket_options: Iterable[Any] | None = None) -> AsyncNetworkStream:
        raise httpcore2.ConnectError("a fetch never goes to a Unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


async def _answer(stream: AsyncNetworkStream, timeout: float | None) -> int:  # noqa: ASYNC109 - per read
    """The status of a proxy's answer to CONNECT, read to the end of its head and no further."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = await stream.read(1, timeout=timeout)  # byte by byte: what follows the head is the tunnel's
        if not chunk or len(head) > _HEAD_LIMIT:
            await stream.aclose()
            raise httpcore2.ProxyError("the proxy closed the connection or sent no answer to CONNECT")
        head += chunk
    parts = head.split(b"\r\n", 1)[0].split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


@functools.cache
def _system_trust() -> ssl.SSLContext:
    """The default TLS context, built once: loading the trust store takes a tenth of a second or more, and a fetch
    would otherwise pay it twice (one transport per scheme)."""
    return httpx2.create_ssl_context()


class GuardedTransport(httpx2.AsyncHTTPTransport):
    """`AsyncHTTPTransport`'s request handling over a connection pool on the guarded backend."""

    def __init__(self, backend: GuardedBackend, *, verify: Any = True) -> None:
        context = _system_trust() if verify is True else httpx2.create_ssl_context(verify=verify)
        super().__init__(verify=context, trust_env=False)
        self._pool = httpcore2.AsyncConnectionPool(ssl_context=context, network_backend=backend)


def environment_proxies() -> dict[str, str]:
    """The proxy for each scheme the environment names (`HTTPS_PROXY`, `HTTP_PROXY`, else `ALL_PROXY`)."""
    found = urllib.request.getproxies_environment()
    return {scheme: proxy for scheme in ("http", "https") if (proxy := found.get(scheme) or found.get("all"))}


def guarded_client(resolver: Resolver, *, trusted: Iterable[str] = (), allow_private: bool = False,
                   proxies: Mapping[str, str] | None = None, verify: Any = True, **client: Any) -> httpx2.AsyncClient:
    """An `httpx2.AsyncClient` every connection of which is checked; `client` are further client arguments.

    `trusted`: hosts an operator configured, where only cloud metadata is refused; `allow_private`: every host is
    (a development switch). `proxies`: by scheme, read from the environment when not given.
    """
    proxies = environment_proxies() if proxies is None else proxies
    trusted = tuple(trusted)
    mounts = {f"{scheme}://": GuardedTransport(GuardedBackend(resolver, proxy=proxies.get(scheme), trusted=trusted,
                                                              allow_private=allow_private), verify=verify)
              for scheme in ("http", "https")}
    # The default transport is never used (both schemes are mounted); naming one keeps the client from building
    # a trust store of its own for it.
    return httpx2.AsyncClient(mounts=mounts, transport=mounts["https://"], trust_env=False, **client)
