"""Knowledge search on the database's own full-text index, the same on PostgreSQL and SQLite."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from capabilities.knowledge.store import FullTextRanker, KnowledgeSearch, KnowledgeStore, chunk, fuse
from capabilities.run import Passage
from storage.db import Database
from storage.fulltext import QueryProblem

REFUNDS = ("# Refund policy\n\nCustomers may ask for a refund within 30 days of purchase. The notice period "
           "for a refund is five working days.\n\nGift cards are never refunded.")
LAPTOPS = ("# Equipment\n\nEvery employee gets a company laptop. A personal laptop must never hold customer "
           "data.\n\nPhones are reimbursed up to 300 euros.")
SECRET = "# Board minutes\n\nThe refund reserve for next year is twelve million."


@pytest_asyncio.fixture
async def documents(db: Database) -> AsyncIterator[tuple[Database, KnowledgeSearch]]:
    """`handbook` holds the refund policy and the equipment rules; `board` holds the minutes."""
    store = KnowledgeStore(db)
    await store.add("handbook", "handbook/refunds.md", "Refund policy", REFUNDS)
    await store.add("handbook", "handbook/equipment.md", "Equipment", LAPTOPS)
    await store.add("board", "board/minutes.md", "Board minutes", SECRET)
    yield db, KnowledgeSearch((FullTextRanker(db),))


async def sources(search: KnowledgeSearch, query: str, collections: tuple[str, ...] = ("handbook",)) -> list[str]:
    return [p.source for p in await search.search(collections, query, limit=10)]


async def test_a_search_bound_to_one_collection_never_returns_another(documents: tuple[Database,
                                                                                       KnowledgeSearch]) -> None:
    _db, search = documents
    assert await sources(search, "refund") == ["handbook/refunds.md"]
    assert await sources(search, "refund", ("board",)) == ["board/minutes.md"]
    assert await sources(search, "twelve million") == []


async def test_words_are_all_required_unless_joined_by_or(documents: tuple[Database, KnowledgeSearch]) -> None:
    _db, search = documents
    assert await sources(search, "refund laptop") == []
    assert sorted(await sources(search, "refund or laptop")) == ["handbook/equipment.md", "handbook/refunds.md"]


async def test_a_quoted_phrase_matches_those_words_in_that_order(documents: tuple[Database,
                                                                                  KnowledgeSearch]) -> None:
    _db, search = documents
    assert await sources(search, '"notice period"') == ["handbook/refunds.md"]
    assert await sources(search, '"period notice"') == []


async def test_a_minus_word_leaves_out_passages_containing_it(documents: tuple[Database, KnowledgeSearch]) -> None:
    _db, search = documents
    assert await sources(search, "laptop") == ["handbook/equipment.md"]
    assert await sources(search, "laptop -personal") == []
    assert await sources(search, "refund -personal") == ["handbook/refunds.md"]


async def test_words_match_whole_without_stemming(documents: tuple[Database, KnowledgeSearch]) -> None:
    _db, search = documents
    assert await sources(search, "refunded") == ["handbook/refunds.md"]
    assert await sources(search, "refun") == []


async def test_a_passage_cites_its_document_and_chunk_with_the_matches_in_bold(
        documents: tuple[Database, KnowledgeSearch]) -> None:
    _db, search = documents
    [passage] = await search.search(("handbook",), "gift cards", limit=5)
    assert (passage.collection, passage.document, passage.source, passage.chunk, passage.chunks) == (
        "handbook", "Refund policy", "handbook/refunds.md", 1, 1)
    assert "**Gift** **cards**" in passage.text or "**Gift cards**" in passage.text


async def test_a_query_without_words_is_a_problem_the_model_can_fix(documents: tuple[Database,
                                                                                     KnowledgeSearch]) -> None:
    _db, search = documents
    with pytest.raises(QueryProblem, match="no words to look for"):
        await search.search(("handbook",), '-- "" !!', limit=5)
    with pytest.raises(QueryProblem, match="not only words to leave out"):  # the text conversation search gives
        await search.search(("handbook",), "-refund", limit=5)


async def test_removing_a_document_takes_it_out_of_the_index(documents: tuple[Database, KnowledgeSearch]) -> None:
    db, search = documents
    assert await KnowledgeStore(db).remove("handbook", "handbook/refunds.md") == 1
    assert await sources(search, "refund") == []
    assert await KnowledgeStore(db).searchable(["handbook", "board", "empty"]) == frozenset({"handbook", "board"})


async def test_adding_a_document_again_replaces_it(documents: tuple[Database, KnowledgeSearch]) -> None:
    db, search = documents
    await KnowledgeStore(db).add("handbook", "handbook/refunds.md", "Refund policy", "Refunds take ninety days.")
    assert await sources(search, "ninety") == ["handbook/refunds.md"]
    assert await sources(search, "gift") == []
    assert len(await KnowledgeStore(db).documents("handbook")) == 2


def test_long_text_is_cut_into_chunks_that_overlap() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 60 for i in range(12)]
    chunks = chunk("\n\n".join(paragraphs), size=1_200, overlap=200)
    assert len(chunks) > 1 and all(len(c) <= 1_400 for c in chunks)
    for before, after in itertools.pairwise(chunks):
        assert after[:100] in before, "each chunk starts with the end of the one before"
    assert all(f"Paragraph {i} " in "".join(chunks) for i in range(12))


def test_reciprocal_rank_fusion_prefers_what_several_rankers_rank_well() -> None:
    def passage(name: str) -> Passage:
        return Passage(collection="c", document=name, source=name, chunk=1, chunks=1, text=name)
    a, b, c = passage("a"), passage("b"), passage("c")
    assert fuse([[a, b], [b, c]], limit=3) == [b, a, c]
    assert fuse([[a, b, c]], limit=2) == [a, b]
