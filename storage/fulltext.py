"""The database's own full-text search, shared by everything that searches words: the turns of conversations
(`messages.text`, here) and the chunks of knowledge collections (`capabilities/knowledge/store.py`).

One query language for both, web-search syntax (`"exact phrase"`, `or`, `-word`), parsed once here:
PostgreSQL reads it with `websearch_to_tsquery('simple', …)` over `to_tsvector('simple', …)`; SQLite gets
the FTS5 `MATCH` expression `fts5_expression` translates it into, over FTS5 tables kept in step by triggers.
A query that can match nothing is refused on both, with one text (`QueryProblem`). Neither stems: the
`simple` configuration and the `unicode61` tokenizer lower-case whole words and nothing more, so every
language is treated alike (`meeting` ≠ `meetings`).

The indexes are not models: `create_all` gets them from the DDL of `FULL_TEXT_INDEXES` (`storage/tables.py`),
deployments from migrations 0006 and 0007, and `modelled` keeps what they create out of the schema comparison.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Integer, bindparam, text


def fts5_tables(name: str) -> frozenset[str]:
    """An FTS5 table and the shadow tables SQLite creates beside it."""
    return frozenset({name, *(f"{name}_{shadow}" for shadow in ("data", "idx", "docsize", "config"))})


@dataclass(frozen=True, slots=True, kw_only=True)
class FullTextIndex:
    """A table's full-text index as the database keeps it: the statements that create it, per dialect, and
    the names of what they create, which no model describes."""

    table: str
    ddl: Mapping[str, tuple[str, ...]]
    objects: frozenset[str]
    """Tables and indexes the statements create."""
    columns: frozenset[str] = frozenset()
    """Generated columns they add to `table`."""


MESSAGES_INDEX = FullTextIndex(
    table="messages",
    ddl={
        "postgresql": (
            "CREATE INDEX ix_messages_search ON messages USING GIN (to_tsvector('simple', text))",
        ),
        "sqlite": (
            "CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='messages', content_rowid='id', "
            "tokenize='unicode61 remove_diacritics 0')",
            "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN "
            "INSERT INTO messages_fts(rowid, text) VALUES (new.id, new.text); END",
            "CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN "
            "INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
            "CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN "
            "INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text); "
            "INSERT INTO messages_fts(rowid, text) VALUES (new.id, new.text); END",
        ),
    },
    objects=frozenset({"ix_messages_search"}) | fts5_tables("messages_fts"),
)
"""The words of every turn (migration 0007 writes the same statements)."""

KNOWLEDGE_INDEX = FullTextIndex(
    table="knowledge_chunks",
    ddl={
        "postgresql": (
            "ALTER TABLE knowledge_chunks ADD COLUMN search tsvector "
            "GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED",
            "CREATE INDEX ix_knowledge_chunks_search ON knowledge_chunks USING gin (search)",
        ),
        "sqlite": (
            "CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5(text, content='knowledge_chunks', "
            "content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
            "CREATE TRIGGER knowledge_chunks_ai AFTER INSERT ON knowledge_chunks BEGIN "
            "INSERT INTO knowledge_chunks_fts(rowid, text) VALUES (new.id, new.text); END",
            "CREATE TRIGGER knowledge_chunks_ad AFTER DELETE ON knowledge_chunks BEGIN "
            "INSERT INTO knowledge_chunks_fts(knowledge_chunks_fts, rowid, text) "
            "VALUES ('delete', old.id, old.text); END",
            "CREATE TRIGGER knowledge_chunks_au AFTER UPDATE ON knowledge_chunks BEGIN "
            "INSERT INTO knowledge_chunks_fts(knowledge_chunks_fts, rowid, text) "
            "VALUES ('delete', old.id, old.text); "
            "INSERT INTO knowledge_chunks_fts(rowid, text) VALUES (new.id, new.text); END",
        ),
    },
    objects=frozenset({"ix_knowledge_chunks_search"}) | fts5_tables("knowledge_chunks_fts"),
    columns=frozenset({"search"}),
)
"""The chunks of knowledge documents: a generated `search` tsvector on PostgreSQL (migration 0006)."""

FULL_TEXT_INDEXES = (MESSAGES_INDEX, KNOWLEDGE_INDEX)


def modelled(name: str | None, type_: str, parents: Mapping[str, str | None]) -> bool:
    """Alembic's `include_name`: everything but what the database maintains for full-text search."""
    if type_ == "column":
        return not any(index.table == parents.get("table_name") and name in index.columns
                       for index in FULL_TEXT_INDEXES)
    return not any(name in index.objects for index in FULL_TEXT_INDEXES)


BOLD = "**"
_TOKEN = re.compile(r'(-?)"([^"]*)"?|([^\s"!&|()<]+)')
"""A phrase (`-"…"` excluded), else a bare word; `websearch_to_tsquery` ends a word at `"` and at the
tsquery operators `! & | ( ) <`, which it then skips, so they are never syntax here either."""
_WORD = re.compile(r"\w+", re.UNICODE)


class QueryProblem(ValueError):
    """A query that can match nothing as written (only exclusions, no words); the message says how to fix it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Term:
    words: tuple[str, ...]
    """One word, or the words of a quoted phrase, lower-cased."""
    excluded: bool = False


def parse(query: str) -> list[list[Term]]:
    """The web-search syntax as groups joined by `or`, each group's terms all required.

    `"exact phrase"`, `or` between alternatives and `-word` to exclude, read as `websearch_to_tsquery` reads
    them: `or` is an operator only between two terms (first or last, it is a word), a lone `-` excludes the
    term after it, and punctuation splits words as both tokenizers do. Raises `QueryProblem` when the query,
    or one of its alternatives, has no word to look for.
    """
    groups: list[list[Term]] = [[]]
    after_term = negate_next = False
    for match in _TOKEN.finditer(query):
        minus, phrase, bare = match.group(1), match.group(2), match.group(3)
        if (bare is not None and bare.lower() == "or" and after_term and not negate_next
                and query[match.end():].strip()):
            groups.append([])
            after_term = False
            continue
        if bare is not None and not bare.strip("-"):
            negate_next = True
            continue
        excluded = negate_next or bool(minus) or (bare is not None and bare.startswith("-"))
        # the token pattern matches a phrase or a bare word, so one of the two is set
        words = tuple(w.lower() for w in _WORD.findall(phrase if phrase is not None else bare or ""))
        if words:
            groups[-1].append(Term(words=words, excluded=excluded))
        after_term, negate_next = True, False
    groups = [group for group in groups if group]
    if not groups:
        raise QueryProblem("The query has no words to look for; name at least one word, e.g. `pricing`.")
    if any(all(term.excluded for term in group) for group in groups):
        raise QueryProblem("Each alternative needs at least one word to look for, not only words to leave out "
                           "(`-word`); e.g. `pricing -draft`.")
    return groups


def fts5_expression(groups: Sequence[Sequence[Term]]) -> str:
    """The FTS5 `MATCH` expression for parsed groups: every word quoted, so nothing is read as an operator."""
    def quoted(term: Term) -> str:
        return '"' + " ".join(term.words) + '"'

    parts: list[str] = []
    for group in groups:
        wanted = " AND ".join(quoted(t) for t in group if not t.excluded)
        unwanted = "".join(f" NOT {quoted(t)}" for t in group if t.excluded)
        parts.append(f"({wanted}{unwanted})")
    return " OR ".join(parts)


def match_query(dialect: str, query: str) -> str:
    """What to bind for the query: on PostgreSQL the web-search text itself, for `websearch_to_tsquery`; on
    SQLite its FTS5 `MATCH` expression. Raises `QueryProblem`, on both, for a query that can match nothing."""
    groups = parse(query)
    return query if dialect == "postgresql" else fts5_expression(groups)


@dataclass(frozen=True, slots=True, kw_only=True)
class Match:
    message_id: int
    conversation_id: int
    rank: float
    """Higher is better, on either dialect."""


def matching_messages(connection: Connection, query: str, conversation_ids: Collection[int], *,
                      limit: int = 2000) -> list[Match]:
    """Turns of these conversations whose words match `query`, best first (raises `QueryProblem`)."""
    dialect = connection.dialect.name
    match = match_query(dialect, query)
    if not conversation_ids:
        return []
    ids = bindparam("ids", list(conversation_ids), type_=Integer(), expanding=True)
    if dialect == "postgresql":
        statement = text(
            "SELECT m.id, m.conversation_id, ts_rank_cd(to_tsvector('simple', m.text), q.query) AS rank "
            "FROM messages m, websearch_to_tsquery('simple', :query) AS q(query) "
            "WHERE to_tsvector('simple', m.text) @@ q.query AND m.conversation_id IN :ids "
            "ORDER BY rank DESC, m.id DESC LIMIT :limit").bindparams(ids)
    else:
        statement = text(
            "SELECT m.id, m.conversation_id, -bm25(messages_fts) AS rank FROM messages_fts "
            "JOIN messages m ON m.id = messages_fts.rowid "
            "WHERE messages_fts MATCH :query AND m.conversation_id IN :ids "
            "ORDER BY rank DESC, m.id DESC LIMIT :limit").bindparams(ids)
    rows = connection.execute(statement, {"query": match, "limit": limit})
    return [Match(message_id=int(r[0]), conversation_id=int(r[1]), rank=float(r[2])) for r in rows]


def passages(connection: Connection, query: str, message_ids: Collection[int]) -> dict[int, str]:
    """The part of each message that matches `query`, the matched words between `**`."""
    if not message_ids:
        return {}
    dialect = connection.dialect.name
    ids = bindparam("ids", list(message_ids), type_=Integer(), expanding=True)
    if dialect == "postgresql":
        statement = text(
            "SELECT m.id, ts_headline('simple', m.text, websearch_to_tsquery('simple', :query), "
            "'StartSel=**, StopSel=**, MaxWords=35, MinWords=12') "
            "FROM messages m WHERE m.id IN :ids").bindparams(ids)
    else:
        statement = text(
            "SELECT rowid, snippet(messages_fts, 0, '**', '**', '…', 32) FROM messages_fts "
            "WHERE messages_fts MATCH :query AND rowid IN :ids").bindparams(ids)
    rows = connection.execute(statement, {"query": match_query(dialect, query)})
    return {int(r[0]): str(r[1]) for r in rows}
