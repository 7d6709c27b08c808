"""What `knowledge` binds when the gateway starts: the search over the stored collections, and which of them hold
a document."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from capabilities.knowledge.store import FullTextRanker, KnowledgeSearch, KnowledgeStore
from capabilities.run import Deployment, DocumentSearch


@dataclass(frozen=True, slots=True, kw_only=True)
class KnowledgeServices:
    search: DocumentSearch
    searchable: Callable[[Sequence[str]], Awaitable[frozenset[str]]]
    """Those of the given collections that hold at least one document."""


def bind(deployment: Deployment) -> KnowledgeServices:
    return KnowledgeServices(search=KnowledgeSearch((FullTextRanker(deployment.db),)),
                             searchable=KnowledgeStore(deployment.db).searchable)
