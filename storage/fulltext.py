"""Full-text search over the words of every turn (`messages.text`), maintained by the database itself.

PostgreSQL: a GIN index over `to_tsvector('simple', text)`, queried with `websearch_to_tsquery`,
ranked by `ts_rank_cd`, passages by `ts_headline`. SQLite: an FTS5 external-content table kept in step
by triggers, queried with a `MATCH` expression translated from the same web-search syntax, ranked by
`bm25`, passages by `snippet`. Neither stems: the `simple` configuration and the `unicode61` tokenizer
lower-case whole words and nothing more, so every language is treated alike (`meeting` ≠ `meetings`).

The index and the FTS5 tables are not models: `create_all` gets them from the DDL here, deployments
from migration 0007, and `modelled` keeps them out of the schema comparison.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

POSTGRES_DDL = (
    "CREATE INDEX ix_messages_search ON messages USING GIN (to_tsvector('simple', text))",
)
SQLITE_DDL = (
    "CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='messages', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 0')",
    "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN "
    "INSERT INTO messages_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN "
    "INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN "
    "INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text); "
    "INSERT INTO messages_fts(rowid, text) VALUES (new.id, new.text); END",
)
DATABASE_MAINTAINED = frozenset({"ix_messages_search", "messages_fts", "messages_fts_data", "messages_fts_idx",
                                 "messages_fts_docsize", "messages_fts_config"})
"""What the DDL above creates: the database keeps these, no model describes them."""

BOLD = "**"
_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_WORD = re.compile(r"\w+", re.UNICODE)


class QueryProblem(ValueError):
    """A query that can match nothing as written (only exclusions, no words); the message says how to fix it."""


def modelled(name: str | None, type_: str, _parents: object) -> bool:
    """Alembic's `include_name`: everything but what the database maintains for full-text search."""
    return name not in DATABASE_MAINTAINED


@dataclass(frozen=True, slots=True, kw_only=True)
class Term:
    words: tuple[str, ...]
    """One word, or the words of a quoted phrase, lower-cased."""
    excluded: bool = False


def parse(query: str) -> list[list[Term]]:
    """The web-search syntax as groups joined by `or`, each group's terms all required.

    `"exact phrase"`, `or` between alternatives and `-word` to exclude, as `websearch_to_tsquery` reads
    them; punctuation splits words as both tokenizers do. Raises `QueryProblem` when a group has no word
    to look for.
    """
    groups: list[list[Term]] = [[]]
    for match in _TOKEN.finditer(query):
        minus, phrase, bare = match.group(1), match.group(2), match.group(3)
        if bare is not None and bare.lower() == "or":
            groups.append([])
            continue
        excluded = bool(minus) or (bare is not None and bare.startswith("-") and len(bare) > 1)
        words = tuple(w.lower() for w in _WORD.findall(phrase if phrase is not None else bare))
        if words:
            groups[-1].append(Term(words=words, excluded=excluded))
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

    parts = []
    for group in groups:
        wanted = " AND ".join(quoted(t) for t in group if not t.excluded)
        unwanted = "".join(f" NOT {quoted(t)}" for t in group if t.excluded)
        parts.append(f"({wanted}{unwanted})")
    return " OR ".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class Match:
    message_id: int
    conversation_id: int
    rank: float
    """Higher is better, on either dialect."""


async def matching_messages(session: AsyncSession, query: str, conversation_ids: Collection[int], *,
                            limit: int = 2000) -> list[Match]:
    """Turns of these conversations whose words match `query`, best first (raises `QueryProblem`)."""
    groups = parse(query)
    if not conversation_ids:
        return []
    ids = bindparam("ids", list(conversation_ids), expanding=True)
    if session.bind.dialect.name == "postgresql":
        statement = text(
            "SELECT m.id, m.conversation_id, ts_rank_cd(to_tsvector('simple', m.text), q.query) AS rank "
            "FROM messages m, websearch_to_tsquery('simple', :query) AS q(query) "
            "WHERE to_tsvector('simple', m.text) @@ q.query AND m.conversation_id IN :ids "
            "ORDER BY rank DESC, m.id DESC LIMIT :limit").bindparams(ids)
        rows = await session.execute(statement, {"query": query, "limit": limit})
    else:
        statement = text(
            "SELECT m.id, m.conversation_id, -bm25(messages_fts) AS rank FROM messages_fts "
            "JOIN messages m ON m.id = messages_fts.rowid "
            "WHERE messages_fts MATCH :query AND m.conversation_id IN :ids "
            "ORDER BY rank DESC, m.id DESC LIMIT :limit").bindparams(ids)
        rows = await session.execute(statement, {"query": fts5_expression(groups), "limit": limit})
    return [Match(message_id=int(r[0]), conversation_id=int(r[1]), rank=float(r[2])) for r in rows]


async def passages(session: AsyncSession, query: str, message_ids: Collection[int]) -> dict[int, str]:
    """The part of each message that matches `query`, the matched words between `**`."""
    if not message_ids:
        return {}
    ids = bindparam("ids", list(message_ids), expanding=True)
    if session.bind.dialect.name == "postgresql":
        statement = text(
            "SELECT m.id, ts_headline('simple', m.text, websearch_to_tsquery('simple', :query), "
            "'StartSel=**, StopSel=**, MaxWords=35, MinWords=12') "
            "FROM messages m WHERE m.id IN :ids").bindparams(ids)
        rows = await session.execute(statement, {"query": query})
    else:
        statement = text(
            "SELECT rowid, snippet(messages_fts, 0, '**', '**', '…', 32) FROM messages_fts "
            "WHERE messages_fts MATCH :query AND rowid IN :ids").bindparams(ids)
        rows = await session.execute(statement, {"query": fts5_expression(parse(query))})
    return {int(r[0]): str(r[1]) for r in rows}
