"""Knowledge collections in the database: documents cut into overlapping chunks, searched by full text.

The search is the database's own: PostgreSQL ranks a generated `tsvector` ('simple' configuration, so words
match whole and unstemmed) with `websearch_to_tsquery`, `ts_rank_cd` and `ts_headline`; SQLite ranks its
FTS5 table with `bm25()` and `snippet()`, the query translated from the same web-search syntax by
`storage.fulltext`, which conversation search shares (one parser, one refusal text). Both answer
in one shape, `Passage`, with the matched words in bold.

Rankers are a seam: `KnowledgeSearch` fuses what each `Ranker` returns by reciprocal rank, so an embedding
ranker (pgvector) is one more entry in that list. Today there is one, full text, and the tool says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import Connection, Row, bindparam, delete, func, insert, select, text
from sqlalchemy.exc import SQLAlchemyError

from capabilities.run import Passage, SearchUnavailable
from storage.db import Database
from storage.fulltext import match_query
from storage.tables import KNOWLEDGE_CHUNKS as CHUNKS
from storage.tables import KNOWLEDGE_DOCUMENTS as DOCUMENTS

CHUNK_SIZE = 1_200
"""Characters per chunk, about a screen of prose: big enough to carry an answer, small enough to rank."""
CHUNK_OVERLAP = 200
"""Characters a chunk repeats of the one before, so a sentence cut at a boundary is whole in one of them."""
RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack et al.): a passage scores 1 / (RRF_K + rank) per ranker."""
READABLE = frozenset({".md", ".markdown", ".txt", ".text", ".rst", ".pdf"})
"""What `gateway knowledge add` reads: Markdown, plain text, and the text layer of PDFs (pypdf)."""
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


class Ranker(Protocol):
    """One way of ranking chunks for a query (full text today; embeddings would be another)."""

    async def rank(self, collections: Sequence[str], query: str, *, limit: int) -> list[Passage]: ...


@dataclass(frozen=True, slots=True)
class KnowledgeSearch:
    """`capabilities.run.DocumentSearch`: the rankers' lists fused by reciprocal rank."""

    rankers: tuple[Ranker, ...]

    async def search(self, collections: Sequence[str], query: str, *, limit: int) -> list[Passage]:
        if not collections:
            return []
        try:
            rankings = [await ranker.rank(collections, query, limit=limit) for ranker in self.rankers]
        except (SQLAlchemyError, OSError, TimeoutError) as exc:
            raise SearchUnavailable(type(exc).__name__) from exc
        return fuse(rankings, limit=limit)


def fuse(rankings: Sequence[Sequence[Passage]], *, limit: int) -> list[Passage]:
    """Reciprocal rank fusion: a passage ranked well by several rankers beats one ranked first by one."""
    if len(rankings) == 1:
        return list(rankings[0][:limit])
    scores: dict[tuple[str, str, int], float] = {}
    first: dict[tuple[str, str, int], Passage] = {}
    for ranking in rankings:
        for rank, passage in enumerate(ranking, start=1):
            key = (passage.collection, passage.source, passage.chunk)
            scores[key] = scores.get(key, 0.0) + 1 / (RRF_K + rank)
            first.setdefault(key, passage)
    return [first[key] for key in sorted(scores, key=lambda k: -scores[k])][:limit]


@dataclass(frozen=True, slots=True)
class FullTextRanker:
    """The database's full-text index: PostgreSQL `tsvector`, or SQLite FTS5."""

    db: Database

    async def rank(self, collections: Sequence[str], query: str, *, limit: int) -> list[Passage]:
        match = match_query(self.db.dialect, query)  # refuses, on both, a query that can match nothing
        statement = _POSTGRES if self.db.dialect == "postgresql" else _SQLITE
        params = {"query": match, "collections": list(collections), "limit": limit}

        def work(connection: Connection) -> list[Passage]:
            rows = connection.execute(statement, params).all()
            return [Passage(collection=r.collection, document=r.title, source=r.source, chunk=r.position,
                            chunks=r.chunks, text=r.passage) for r in rows]
        return await self.db.run(work, single=True)


_POSTGRES = text("""
SELECT c.collection, c.position, d.title, d.source, d.chunks,
       ts_headline('simple', c.text, q.query,
                   'StartSel=**, StopSel=**, MaxWords=60, MinWords=25, MaxFragments=2, FragmentDelimiter=" … "')
         AS passage
FROM knowledge_chunks AS c
JOIN knowledge_documents AS d ON d.id = c.document_id
CROSS JOIN websearch_to_tsquery('simple', :query) AS q(query)
WHERE c.collection IN :collections AND c.search @@ q.query
ORDER BY ts_rank_cd(c.search, q.query) DESC, c.id
LIMIT :limit
""").bindparams(bindparam("collections", expanding=True))

_SQLITE = text("""
SELECT c.collection, c.position, d.title, d.source, d.chunks,
       snippet(knowledge_chunks_fts, 0, '**', '**', ' … ', 48) AS passage
FROM knowledge_chunks_fts AS f
JOIN knowledge_chunks AS c ON c.id = f.rowid
JOIN knowledge_documents AS d ON d.id = c.document_id
WHERE knowledge_chunks_fts MATCH :query AND c.collection IN :collections
ORDER BY bm25(knowledge_chunks_fts), c.id
LIMIT :limit
""").bindparams(bindparam("collections", expanding=True))


def chunk(content: str, *, size: int = CHUNK_SIZE, overlap: int = CHUNK_OVERLAP) -> list[str]:
    """Cut `content` into chunks of about `size` characters at paragraph breaks (at spaces inside a long
    paragraph), each repeating the last `overlap` characters or so of the one before."""
    pieces = [piece for paragraph in re.split(r"\n\s*\n", content.strip())
              for piece in _split_long(paragraph.strip(), size) if piece]
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + 2 + len(piece) > size:
            chunks.append(current)
            current = _tail(current, overlap)
        current = f"{current}\n\n{piece}" if current else piece
    if current and (not chunks or not chunks[-1].endswith(current)):
        chunks.append(current)
    return chunks


def _split_long(paragraph: str, size: int) -> list[str]:
    pieces: list[str] = []
    while len(paragraph) > size:
        cut = paragraph.rfind(" ", 0, size)
        cut = size if cut <= 0 else cut
        pieces.append(paragraph[:cut].strip())
        paragraph = paragraph[cut:].strip()
    return [*pieces, paragraph]


def _tail(chunk_text: str, overlap: int) -> str:
    """The end of a chunk to repeat, starting at a word."""
    if overlap <= 0 or len(chunk_text) <= overlap:
        return "" if overlap <= 0 else chunk_text
    tail = chunk_text[-overlap:]
    space = tail.find(" ")
    return tail[space + 1:] if 0 <= space < len(tail) - 1 else tail


def title_of(path: Path, content: str) -> str:
    """A Markdown document's first `# ` heading, else the file's name."""
    heading = _HEADING.search(content) if path.suffix.lower() in {".md", ".markdown"} else None
    return heading.group(1).strip()[:512] if heading else path.name


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentInfo:
    collection: str
    source: str
    title: str
    chunks: int
    characters: int


class UnreadableDocument(ValueError):
    """A path `gateway knowledge add` cannot take: not text, not a kind it reads, or not there."""


def documents_at(paths: Sequence[Path]) -> list[Path]:
    """The files to add: each file named, and the readable files under each folder named, sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in READABLE)
        elif path.is_file():
            if path.suffix.lower() not in READABLE:
                raise UnreadableDocument(f"{path}: only Markdown, plain text and PDF can be added "
                                         f"({', '.join(sorted(READABLE))})")
            found.append(path)
        else:
            raise UnreadableDocument(f"{path}: no such file or folder")
    return found


def read_document(path: Path) -> str:
    """The document's text; a PDF's pages one after another, a blank line between them."""
    if path.suffix.lower() == ".pdf":
        # pypdf (10 MB) is for `gateway knowledge add`, never a running gateway's: it loads with the first PDF.
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
        try:
            pages = PdfReader(path).pages
            return "\n\n".join(text for page in pages if (text := page.extract_text().strip()))
        except PdfReadError as exc:
            raise UnreadableDocument(f"{path}: not a readable PDF ({exc})") from None
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UnreadableDocument(f"{path}: not UTF-8 text") from None


class KnowledgeStore:
    """Adds, lists and removes the documents of collections (`gateway knowledge`)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, collection: str, source: str, title: str, content: str) -> DocumentInfo:
        """Store a document as chunks, replacing one already added from the same source."""
        pieces = chunk(content)

        info = DocumentInfo(collection=collection, source=source, title=title, chunks=len(pieces),
                            characters=len(content))

        def work(connection: Connection) -> DocumentInfo:
            _delete(connection, collection, source)
            document_id = connection.execute(insert(DOCUMENTS).values(
                collection=collection, source=source, title=title, chunks=info.chunks, characters=info.characters)
                .returning(DOCUMENTS.c.id)).scalar_one()
            if pieces:
                connection.execute(insert(CHUNKS), [
                    {"document_id": document_id, "collection": collection, "position": i, "text": piece}
                    for i, piece in enumerate(pieces, start=1)])
            return info
        return await self._db.run(work)

    async def documents(self, collection: str | None = None) -> list[DocumentInfo]:
        def work(connection: Connection) -> list[DocumentInfo]:
            query = select(DOCUMENTS).order_by(DOCUMENTS.c.collection, DOCUMENTS.c.source)
            if collection is not None:
                query = query.where(DOCUMENTS.c.collection == collection)
            return [_info(row) for row in connection.execute(query)]
        return await self._db.run(work, single=True)

    async def remove(self, collection: str, source: str | None = None) -> int:
        """Delete one document of a collection (by its source), or every document of it; the count deleted."""
        return await self._db.run(lambda connection: _delete(connection, collection, source))

    async def searchable(self, collections: Sequence[str]) -> frozenset[str]:
        """Those of `collections` that hold at least one chunk."""
        if not collections:
            return frozenset()

        def work(connection: Connection) -> frozenset[str]:
            rows = connection.execute(select(CHUNKS.c.collection, func.count()).where(
                CHUNKS.c.collection.in_(list(collections))).group_by(CHUNKS.c.collection))
            return frozenset(name for name, count in rows.all() if count)
        return await self._db.run(work, single=True)


def _delete(connection: Connection, collection: str, source: str | None) -> int:
    """Delete a collection's documents (one, when `source` names it) with their chunks; the count deleted.
    Chunks go first and explicitly, so SQLite's FTS5 triggers see every row that leaves."""
    documents = select(DOCUMENTS.c.id).where(DOCUMENTS.c.collection == collection)
    if source is not None:
        documents = documents.where(DOCUMENTS.c.source == source)
    ids = list(connection.execute(documents).scalars())
    if ids:
        connection.execute(delete(CHUNKS).where(CHUNKS.c.document_id.in_(ids)))
        connection.execute(delete(DOCUMENTS).where(DOCUMENTS.c.id.in_(ids)))
    return len(ids)


def _info(row: Row[Any]) -> DocumentInfo:
    return DocumentInfo(collection=row.collection, source=row.source, title=row.title, chunks=row.chunks,
                        characters=row.characters)
