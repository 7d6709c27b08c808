"""A mem0 server on 127.0.0.1 over real TLS, speaking either dialect: mem0's cloud platform API or its
open-source REST server. Its certificate is self-signed for 127.0.0.1, so a client trusts it only through
`ca_file` (what `MEM0_CA_BUNDLE` points a deployment at for an internal CA); nothing skips verification."""

from __future__ import annotations

import datetime as dt
import ipaddress
import itertools
import ssl
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.loopback import serving


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate (its own CA) and key for 127.0.0.1, written as PEM files into `directory`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake mem0")])
    now = dt.datetime.now(dt.UTC)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                  critical=False)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    cert_file, key_file = directory / "mem0-cert.pem", directory / "mem0-key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


@dataclass(frozen=True, slots=True, kw_only=True)
class Received:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class FakeMem0:
    dialect: Literal["cloud", "self_hosted"]
    key: str
    cert_file: Path
    key_file: Path
    received: list[Received] = field(default_factory=list)
    memories: dict[str, list[str]] = field(default_factory=dict)
    """Texts by `user_id`."""
    status: int | None = None
    """Answer every request with this status (a 503 outage, say) instead of serving it."""
    redirect_to: str | None = None
    """Answer every request with a 307 to this URL."""
    port: int = 0
    _server: AsyncExitStack = field(default_factory=AsyncExitStack)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeMem0:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        url = await self._server.enter_async_context(serving(app, ssl_context=context))
        self.port = int(url.rsplit(":", 1)[1])
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._server.aclose()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json() if request.can_read_body else None
        self.received.append(Received(method=request.method, path=request.path, query=dict(request.query),
                                      headers=dict(request.headers), body=body))
        if self.redirect_to is not None:
            raise web.HTTPTemporaryRedirect(self.redirect_to)
        if self.status is not None:
            return web.json_response({"detail": "unavailable"}, status=self.status)
        if not self._authorized(request):
            return web.json_response({"detail": "Invalid API key"}, status=401)
        route = (request.method, request.path)
        cloud = self.dialect == "cloud"
        if route == (("POST", "/v1/memories/") if cloud else ("POST", "/memories")):
            text = body["messages"][-1]["content"]
            self.memories.setdefault(body["user_id"], []).append(text)
            added = [{"id": str(next(self._ids)), "memory": text, "event": "ADD"}]
            return web.json_response(added if cloud else {"results": added})
        if route == (("POST", "/v2/memories/search/") if cloud else ("POST", "/search")):
            user = body["filters"]["user_id"] if cloud else body["user_id"]
            found = self._search(user, body["query"])[:body.get("top_k", 10)]
            return web.json_response(found if cloud else {"results": found})
        if route == (("DELETE", "/v1/memories/") if cloud else ("DELETE", "/memories")):
            self.memories.pop(request.query["user_id"], None)
            return web.json_response({"message": "Memories deleted successfully!"})
        return web.json_response({"detail": "Not Found"}, status=404)

    def _authorized(self, request: web.Request) -> bool:
        if self.dialect == "cloud":
            return request.headers.get("Authorization") == f"Token {self.key}"
        return request.headers.get("X-API-Key") == self.key

    def _search(self, user_id: str, query: str) -> list[dict[str, Any]]:
        words = set(query.lower().split())
        scored = [(len(words & set(text.lower().rstrip(".").split())) / max(len(words), 1), text)
                  for text in self.memories.get(user_id, [])]
        return [{"id": str(i), "memory": text, "score": score, "user_id": user_id}
                for i, (score, text) in enumerate(sorted(scored, reverse=True)) if score > 0]
