"""The async engine and the one transaction helper every query goes through."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from storage.models import Base

log = logging.getLogger(__name__)
T = TypeVar("T")

_RETRIES = 5


class Database:
    """Owns the engine; `transaction` runs a unit of work and retries it on transient conflicts."""

    def __init__(self, url: str, **engine_options: Any) -> None:
        self.url = url
        self.engine: AsyncEngine = create_async_engine(url, **_defaults(url), **engine_options)
        if self.dialect == "sqlite":
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """One committed transaction; use `transaction()` when the work can simply be retried."""
        async with self._sessions() as session, session.begin():
            yield session

    async def transaction(self, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
        for attempt in range(1, _RETRIES + 1):
            try:
                async with self.session() as session:
                    return await work(session)
            except (OperationalError, DBAPIError) as exc:
                if attempt == _RETRIES or not _transient(exc):
                    raise
                log.info("transient database conflict, retrying (attempt %d): %s", attempt, exc.orig)
            await asyncio.sleep(0.05 * attempt)
        raise AssertionError("unreachable")

    async def create_all(self) -> None:
        """Create the tables directly (tests); deployments run the Alembic migrations."""
        async with self.engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)

    async def close(self) -> None:
        await self.engine.dispose()


def insert_for(dialect: str) -> Callable[..., Any]:
    """The dialect's `INSERT` that knows `ON CONFLICT` (both spell it the same; the core `insert` does not)."""
    return pg_insert if dialect == "postgresql" else sqlite_insert


def _defaults(url: str) -> dict[str, Any]:
    if url.startswith("sqlite"):
        return {"connect_args": {"timeout": 30}}
    return {"pool_pre_ping": True, "pool_size": 10, "max_overflow": 10}


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _transient(exc: DBAPIError) -> bool:
    text = str(exc.orig).lower()
    code = getattr(exc.orig, "sqlstate", None)
    return code in {"40001", "40P01"} or "database is locked" in text or exc.connection_invalidated
