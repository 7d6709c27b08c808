"""The Alembic migrations build exactly the schema the models describe, on both databases."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from storage.db import Database
from storage.migrate import upgrade
from storage.models import Base


async def test_migrations_match_the_models(database_url: str) -> None:
    db = Database(database_url)
    try:
        await upgrade(db)
        async with db.engine.connect() as conn:
            differences = await conn.run_sync(
                lambda sync: compare_metadata(MigrationContext.configure(sync, opts={"compare_type": True}),
                                              Base.metadata))
    finally:
        await db.close()
    assert differences == []
