"""Knowledge: the collections gateway.yaml defines, their documents, upload and remove, through the store and
readers `gateway knowledge` uses."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path, PurePath
from urllib.parse import urlencode

from starlette.datastructures import UploadFile
from starlette.responses import RedirectResponse, Response

from capabilities.knowledge.store import READABLE, KnowledgeStore, UnreadableDocument, read_document, title_of
from gateway.config.schema import GatewayConfig
from gateway.server.console.audit import ConsoleAudit
from gateway.server.console.gate import Visit
from gateway.server.console.render import Renderer

MAX_UPLOAD = 10 * 2**20
"""Bytes one uploaded document may have."""


class KnowledgePage:
    def __init__(self, *, renderer: Renderer, store: KnowledgeStore, config: GatewayConfig, audit: ConsoleAudit,
                 base: str) -> None:
        self._render = renderer
        self._store = store
        self._collections = [spec.name for spec in config.collections]
        self._audit = audit
        self._base = base

    async def show(self, visit: Visit) -> Response:
        documents = await self._store.documents()
        return self._render.page(visit, "knowledge.html", collections=self._collections, documents=documents,
                                 readable=", ".join(sorted(READABLE)), told=visit.request.query_params.get("told", ""))

    async def upload(self, visit: Visit) -> Response:
        form = await visit.request.form()  # parsed by the gate already (its CSRF token); files are spooled to disk
        collection, upload = form.get("collection"), form.get("document")
        if collection not in self._collections or not isinstance(upload, UploadFile) or not upload.filename:
            return self._told("Choose a collection gateway.yaml defines, and a file.")
        name = PurePath(upload.filename).name
        data = await upload.read(MAX_UPLOAD + 1)
        if len(data) > MAX_UPLOAD:
            return self._told(f"{name} is over {MAX_UPLOAD // 2**20} MB; split it, or add it with `gateway knowledge "
                              "add`.")
        try:
            content = await asyncio.to_thread(_read, name, data)
        except UnreadableDocument as exc:
            return self._told(str(exc))
        if not content.strip():
            return self._told(f"{name} has no text to add.")
        info = await self._store.add(str(collection), name, title_of(Path(name), content), content)
        await self._audit.record(visit.operator.name, "added a document", f"{collection}: {name}")
        return self._told(f"Added {info.source} to {collection}: {info.chunks} chunk(s).")

    async def remove(self, visit: Visit) -> Response:
        form = await visit.request.form()
        collection, source = str(form.get("collection", "")), str(form.get("source", ""))
        removed = await self._store.remove(collection, source) if collection in self._collections and source else 0
        if removed:
            await self._audit.record(visit.operator.name, "removed a document", f"{collection}: {source}")
        return self._told(f"Removed {source} from {collection}." if removed else f"{collection} has no {source!r}.")

    def _told(self, text: str) -> Response:
        return RedirectResponse(f"{self._base}/knowledge?{urlencode({'told': text})}", status_code=303)


def _read(name: str, data: bytes) -> str:
    """The upload read as `gateway knowledge add` reads a file: by its suffix, from a temporary copy."""
    suffix = PurePath(name).suffix.lower()
    if suffix not in READABLE:
        raise UnreadableDocument(f"{name}: only Markdown, plain text and PDF can be added "
                                 f"({', '.join(sorted(READABLE))})")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"document{suffix}"
        path.write_bytes(data)
        return read_document(path).replace(str(path), name)
