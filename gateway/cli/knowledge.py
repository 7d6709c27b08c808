"""`gateway knowledge`: add documents to the collections gateway.yaml defines, list them, remove them.

A collection is defined in gateway.yaml (`collections:`) and bound by agents by name; its documents live in
the database, so every replica searches the same ones. Adding a document again (the same path) replaces it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from gateway.cli.failures import OperatorError

if TYPE_CHECKING:
    from storage.db import Database

T = TypeVar("T")

knowledge_app = typer.Typer(help="Add Markdown and text documents to knowledge collections, list them, remove them.",
                            no_args_is_help=True)

ConfigOption = Annotated[Path, typer.Option("--config", "-c", "--file", "-f", help="Path to gateway.yaml.")]
CollectionArgument = Annotated[str, typer.Argument(help="A collection defined under collections: in gateway.yaml.")]


@knowledge_app.command("add")
def add(collection: CollectionArgument,
        paths: Annotated[list[Path], typer.Argument(help="Markdown or text files, or folders of them.")],
        config: ConfigOption = Path("gateway.yaml")) -> None:
    """Add documents to a collection, cut into overlapping chunks; a path added before is replaced."""
    # Each command imports the store and the database when it runs, as `gateway/cli/main.py` says why.
    from capabilities.knowledge.store import KnowledgeStore, UnreadableDocument, documents_at, read_document, title_of

    _defined(config, collection)
    try:
        files = documents_at(paths)
        documents = [(str(path), title_of(path, content), content)
                     for path in files if (content := read_document(path)).strip()]
    except UnreadableDocument as exc:
        raise OperatorError(str(exc)) from None
    if not documents:
        raise OperatorError(f"nothing to add: no Markdown or text with any content under {', '.join(map(str, paths))}")

    async def store(db: Database) -> None:
        knowledge = KnowledgeStore(db)
        for source, title, content in documents:
            info = await knowledge.add(collection, source, title, content)
            typer.echo(f"added {info.source} to {collection}: {info.title!r}, {info.chunks} chunk(s)")
    _run(store)


@knowledge_app.command("list")
def list_documents(collection: Annotated[str | None, typer.Argument(help="Only this collection.")] = None) -> None:
    """Every document of every collection (or of one): collection, source, chunks, characters, title."""
    from capabilities.knowledge.store import KnowledgeStore

    rows = _run(lambda db: KnowledgeStore(db).documents(collection))
    if not rows:
        typer.echo("no documents yet" + (f" in {collection}" if collection else "")
                   + ": add some with `gateway knowledge add COLLECTION PATH…`")
    for row in rows:
        typer.echo(f"{row.collection:<20} {row.source:<48} {row.chunks:>4} chunk(s) {row.characters:>8,} chars  "
                   f"{row.title}")


@knowledge_app.command("remove")
def remove(collection: CollectionArgument,
           source: Annotated[str | None, typer.Argument(help="One document's source, as `list` shows it; "
                                                            "leave it out to empty the collection.")] = None,
           yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False) -> None:
    """Remove one document from a collection, or every document of it."""
    from capabilities.knowledge.store import KnowledgeStore

    if source is None and not yes:
        typer.confirm(f"Remove every document of collection {collection!r}?", abort=True)
    removed = _run(lambda db: KnowledgeStore(db).remove(collection, source))
    if source is not None and not removed:
        raise OperatorError(f"{collection} has no document {source!r}; `gateway knowledge list {collection}` "
                            "shows what it holds")
    typer.echo(f"removed {removed} document(s) from {collection}")


def _defined(config: Path, collection: str) -> None:
    from gateway.config.schema import load_config

    names = [spec.name for spec in load_config(config).collections]
    if collection not in names:
        raise OperatorError(f"{collection!r} is not a collection of {config} (collections: "
                            f"{', '.join(names) or 'none defined'}); define it under collections: first")


def _run(work: Callable[[Database], Awaitable[T]]) -> T:
    from gateway.cli.database import existing_database
    from gateway.config.schema import Settings

    async def main() -> T:
        async with existing_database(Settings().database_url) as db:
            return await work(db)
    return asyncio.run(main())
