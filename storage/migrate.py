"""Schema migrations (Alembic) applied over the gateway's own engine."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.engine import Connection

from storage.db import Database

MIGRATIONS = Path(__file__).parent / "migrations"
MIGRATION_LOCK = 0x6761_7465_7761_79
"""The PostgreSQL advisory lock a migration holds: the migrate job and replicas starting beside it take turns."""


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


async def upgrade(db: Database, revision: str = "head") -> None:
    """Migrate to `revision` in one transaction; on PostgreSQL under `MIGRATION_LOCK`, so concurrent runs queue
    and the later ones find the schema already there."""
    async with db.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(sync), revision))


async def current_revision(db: Database) -> str | None:
    """The revision the database stands at; None before the first migration."""
    async with db.engine.connect() as conn:
        return await conn.run_sync(lambda sync: MigrationContext.configure(sync).get_current_revision())


async def revise(db: Database, message: str) -> None:
    """Write a new migration from the difference between the models and the database."""
    async with db.engine.begin() as conn:
        await conn.run_sync(lambda sync: command.revision(alembic_config(sync), message=message,
                                                          autogenerate=True))
