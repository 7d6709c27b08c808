"""A fake DuckDuckGo reached the way `ddgs` really reaches it: over HTTPS, through a proxy.

`ddgs` speaks to `https://html.duckduckgo.com/html/` with its own Rust HTTP client, which takes a proxy
(`DDGS_PROXY`) and a CA bundle to trust (`GATEWAY_DDGS_CA_FILE` in the gateway). This fake is both: a loopback
HTTP proxy that answers `CONNECT`, then terminates TLS itself with a certificate for the host asked for, signed
by a CA made for this fake, and answers the HTML results page DuckDuckGo serves. Nothing leaves the machine: a
`CONNECT` to any host is answered here, and recorded.
"""

from __future__ import annotations

import asyncio
import datetime
import re
import ssl
import tempfile
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from urllib.parse import parse_qs

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HOST = "html.duckduckgo.com"


def _certificate(subject: str, issuer: str, public_key: ec.EllipticCurvePublicKey, signer: ec.EllipticCurvePrivateKey,
                 *, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
               .public_key(public_key).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(hours=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
    return builder.sign(signer, hashes.SHA256())


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


@dataclass
class FakeDuckDuckGo:
    hits: list[tuple[str, str, str]] = field(default_factory=lambda: [
        ("Pydantic AI", "https://ai.pydantic.dev/", "Agent framework for Python."),
        ("Release notes", "https://github.com/pydantic/pydantic-ai/releases", "What changed in 2.62.")])
    """(title, url, snippet) answered to every query but `nothing`."""
    proxy_url: str = ""
    ca_file: str = ""
    tunnels: list[str] = field(default_factory=list)
    """The `host:port` of every CONNECT."""
    queries: list[dict[str, list[str]]] = field(default_factory=list)
    """The form body of every search."""
    _server: asyncio.Server | None = None
    _dir: tempfile.TemporaryDirectory[str] | None = None
    _tls: ssl.SSLContext | None = None

    async def __aenter__(self) -> FakeDuckDuckGo:
        self._dir = tempfile.TemporaryDirectory()
        folder = Path(self._dir.name)
        ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        ca = _certificate("fake search CA", "fake search CA", ca_key.public_key(), ca_key, ca=True)
        leaf = _certificate(HOST, "fake search CA", key.public_key(), ca_key, ca=False)
        (folder / "ca.pem").write_bytes(_pem(ca))
        (folder / "leaf.pem").write_bytes(_pem(leaf))
        (folder / "key.pem").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._tls.load_cert_chain(folder / "leaf.pem", folder / "key.pem")
        self.ca_file = str(folder / "ca.pem")
        self._server = await asyncio.start_server(self._tunnel, "127.0.0.1", 0)
        self.proxy_url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        if self._dir is not None:
            self._dir.cleanup()

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await reader.readuntil(b"\r\n\r\n")
            target = request.split(b" ", 2)[1].decode()
            self.tunnels.append(target)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            assert self._tls is not None
            await writer.start_tls(self._tls)
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"\r\ncontent-length:\s*(\d+)", head, re.IGNORECASE)
            body = await reader.readexactly(int(length.group(1))) if length else b""
            form = parse_qs(body.decode())
            self.queries.append(form)
            page = self._page(form.get("q", [""])[0]).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: %d\r\n"
                         b"connection: close\r\n\r\n" % len(page) + page)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    def _page(self, query: str) -> str:
        found = [] if query == "nothing" else self.hits
        results = "".join(
            f'<div class="result results_links web-result"><div class="links_main result__body">'
            f'<h2 class="result__title"><a class="result__a" href="{escape(url)}">{escape(title)}</a></h2>'
            f'<a class="result__snippet" href="{escape(url)}">{escape(snippet)}</a></div></div>'
            for title, url, snippet in found)
        return f'<html><body><div class="results">{results}</div></body></html>'
