"""The Alembic migrations build exactly the schema the models describe, on both databases."""

from __future__ import annotations

import asyncio

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from storage.db import Database
from storage.fulltext import modelled
from storage.migrate import alembic_config, current_revision, upgrade
from storage.models import Base
from storage.revision import HEAD, is_current


async def test_migrations_match_the_models(database_url: str) -> None:
    db = Database(database_url)
    try:
        await upgrade(db)
        async with db.engine.connect() as conn:
            differences = await conn.run_sync(
                lambda sync: compare_metadata(MigrationContext.configure(sync, opts={"compare_type": True,
                                                                             "include_name": modelled}),
                                              Base.metadata))
    finally:
        await db.close()
    assert differences == []


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_concurrent_migrations_of_a_fresh_database_take_turns(database_url: str) -> None:
    """The migrate job and a replica starting beside it both migrate; neither fails on the other's tables."""
    databases = [Database(database_url) for _ in range(3)]
    try:
        await asyncio.gather(*(upgrade(db) for db in databases))
        revision = await current_revision(databases[0])
    finally:
        await asyncio.gather(*(db.close() for db in databases))
    assert revision == ScriptDirectory.from_config(alembic_config()).get_current_head()


async def test_a_start_finds_the_schema_current_only_at_the_newest_migration(database_url: str) -> None:
    """`storage.revision.HEAD` is Alembic's head (a start skips loading Alembic when the database stands there)."""
    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == HEAD
    db = Database(database_url)
    try:
        assert not await is_current(db)  # never migrated
        await upgrade(db, "0009")
        assert not await is_current(db)
        await upgrade(db)
        assert await is_current(db)
    finally:
        await db.close()
