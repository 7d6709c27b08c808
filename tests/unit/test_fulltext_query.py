"""The one web-search query language of every full-text search (`storage/fulltext.py`): parsed once, read
alike by PostgreSQL's `websearch_to_tsquery` and by the FTS5 expression SQLite gets, refused alike."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from storage.db import Database
from storage.fulltext import QueryProblem, Term, fts5_expression, match_query, parse

NO_WORDS = "The query has no words to look for; name at least one word, e.g. `pricing`."
ONLY_EXCLUSIONS = ("Each alternative needs at least one word to look for, not only words to leave out (`-word`); "
                   "e.g. `pricing -draft`.")
DOCUMENTS = {
    "refunds": "Customers may ask for a refund; the notice period is five days.",
    "laptops": "A personal laptop must never hold customer data.",
    "drafts": "The refund draft, not yet final.",
    "phones": "Phones are reimbursed, and a laptop is lent.",
}


def test_a_query_is_groups_joined_by_or_of_required_and_excluded_terms() -> None:
    assert parse('Refund "Notice  Period" or laptop -personal -"old draft"') == [
        [Term(words=("refund",)), Term(words=("notice", "period"))],
        [Term(words=("laptop",)), Term(words=("personal",), excluded=True),
         Term(words=("old", "draft"), excluded=True)],
    ]


def test_punctuation_splits_words_and_is_never_an_operator() -> None:
    assert parse("NEAR(a b) AND x*") == [[Term(words=("near",)), Term(words=("a",)), Term(words=("b",)),
                                          Term(words=("and",)), Term(words=("x",))]]
    assert parse('"half quoted') == [[Term(words=("half", "quoted"))]]
    assert parse("e-mail") == [[Term(words=("e", "mail"))]]


def test_or_is_an_operator_only_between_terms_and_a_lone_minus_excludes_the_next() -> None:
    assert parse("or refund or") == [[Term(words=("or",)), Term(words=("refund",)), Term(words=("or",))]]
    assert parse("a or or b") == [[Term(words=("a",))], [Term(words=("or",)), Term(words=("b",))]]
    assert parse("laptop - personal") == [[Term(words=("laptop",)), Term(words=("personal",), excluded=True)]]
    assert parse('"to be or not"') == [[Term(words=("to", "be", "or", "not"))]]


def test_the_sqlite_expression_quotes_every_word_so_nothing_is_an_operator() -> None:
    assert fts5_expression(parse('"q3 pricing" NEAR or -draft x')) == '("q3 pricing" AND "near") OR ("x" NOT "draft")'
    assert fts5_expression(parse('refund "notice period" or laptop -personal')) == (
        '("refund" AND "notice period") OR ("laptop" NOT "personal")')


@pytest.mark.parametrize("query", ["", "   ", '-- "" !!', "- -", "(!)"])
def test_a_query_without_words_is_refused_with_one_text(query: str) -> None:
    with pytest.raises(QueryProblem) as refused:
        parse(query)
    assert str(refused.value) == NO_WORDS


@pytest.mark.parametrize("query", ["-draft", "pricing or -draft", '-"old draft"'])
def test_an_alternative_of_only_exclusions_is_refused_with_one_text(query: str) -> None:
    with pytest.raises(QueryProblem) as refused:
        parse(query)
    assert str(refused.value) == ONLY_EXCLUSIONS


@pytest.mark.parametrize("dialect", ["postgresql", "sqlite"])
def test_both_dialects_refuse_what_can_match_nothing(dialect: str) -> None:
    with pytest.raises(QueryProblem, match="not only words to leave out"):
        match_query(dialect, "-refund")


def test_postgresql_reads_the_query_itself_and_sqlite_its_expression() -> None:
    assert match_query("postgresql", "refund -draft") == "refund -draft"
    assert match_query("sqlite", "refund -draft") == '("refund" NOT "draft")'


async def matching(database_url: str, query: str) -> set[str]:
    """The names of `DOCUMENTS` that `query` matches, as the dialect's own full-text search reads it."""
    db = Database(database_url)
    try:
        async with db.engine.begin() as conn:
            if db.dialect == "postgresql":
                rows = await conn.execute(text(
                    "SELECT name FROM (VALUES " + ", ".join(f"(:n{i}, :d{i})" for i in range(len(DOCUMENTS)))
                    + ") AS docs(name, body) WHERE to_tsvector('simple', body) @@ websearch_to_tsquery('simple', "
                    ":query)"), {"query": match_query(db.dialect, query),
                                 **{f"n{i}": n for i, n in enumerate(DOCUMENTS)},
                                 **{f"d{i}": d for i, d in enumerate(DOCUMENTS.values())}})
            else:
                await conn.execute(text("CREATE VIRTUAL TABLE temp.docs USING fts5(name UNINDEXED, body, "
                                        "tokenize='unicode61 remove_diacritics 0')"))
                for name, body in DOCUMENTS.items():
                    await conn.execute(text("INSERT INTO temp.docs(name, body) VALUES (:n, :b)"),
                                       {"n": name, "b": body})
                rows = await conn.execute(text("SELECT name FROM docs WHERE docs MATCH :query"),
                                          {"query": match_query(db.dialect, query)})
            return {row[0] for row in rows}
    finally:
        await db.close()


@pytest.mark.parametrize(("query", "expected"), [
    ("refund", {"refunds", "drafts"}),
    ("refund -draft", {"refunds"}),
    ('"notice period"', {"refunds"}),
    ('"period notice"', set()),
    ("laptop -personal", {"phones"}),
    ("draft or personal", {"drafts", "laptops"}),
    ("refund -draft or phones", {"refunds", "phones"}),
    ('refund -"refund draft"', {"refunds"}),
    ("LAPTOP customer", {"laptops"}),
    ("data(customer", {"laptops"}),
    ("or refund", set()),
    ("refund or", set()),
    ("laptop - personal", {"phones"}),
    ("refund or or phones", {"refunds", "drafts"}),
    ("laptops", set()),
])
async def test_a_query_matches_the_same_on_both_databases(database_url: str, query: str, expected: set[str]) -> None:
    assert await matching(database_url, query) == expected
