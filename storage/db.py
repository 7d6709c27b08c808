"""The engines and the two transaction helpers every query goes through.

`run()` runs a synchronous function of a plain `Connection` as one transaction on a worker thread, on a synchronous
engine: the path of every statement the serving path makes. Measured on this code, a one-statement transaction
costs 1.3 ms of CPU through the async session (a greenlet switch and a driver thread hop per statement) against
0.1 to 0.25 ms with the sync engine on SQLite. `transaction()` and `session()` run async work in an `AsyncSession`
on the async engine: the tests' way to read and write rows, and the migrations' engine. That engine, the ORM
session, greenlet and the async driver (about 10 MB together) load at first use, so a replica carries none.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError, OperationalError

from storage.tables import metadata

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

log = logging.getLogger(__name__)
T = TypeVar("T")

_RETRIES = 5
_CONFLICT_BACKOFF = 0.05
_CONNECTION_BACKOFF = 0.1
"""Doubling from here, five tries span about three seconds: a pool reconnect or a quick restart, no more."""
_CONNECTION_LOST = ("08", "57P01", "57P02", "57P03")
"""SQLSTATE class 08 (connection exception) and the shutdown codes a restarting server sends."""
_SYNC_DRIVERS = {"sqlite+aiosqlite": "sqlite+pysqlite", "postgresql+psycopg": "postgresql+psycopg",
                 "postgresql+psycopg_async": "postgresql+psycopg"}
"""The synchronous driver `run()` uses for each async one: the same library underneath (sqlite3, psycopg 3)."""
_POOL_SIZE = 10
"""Connections an engine keeps; `run()` has a thread for each of its own."""


class Database:
    """Owns the engine; `transaction` runs a unit of work and retries it on transient conflicts."""

    def __init__(self, url: str, **engine_options: Any) -> None:
        self.url = url
        self.dialect: str = make_url(url).get_backend_name()
        self._engine_options = engine_options
        self._async: tuple[AsyncEngine, async_sessionmaker[AsyncSession]] | None = None
        """`transaction()`'s engine and sessions, made at its first use."""
        self.sync_engine: Engine | None = _sync_engine(url, engine_options)
        """`run()`'s engine: the same database through the same library's synchronous driver; None for an in-memory
        SQLite database, which a second engine would not see (`run()` then takes the async path)."""
        if self.dialect == "sqlite" and self.sync_engine is not None:
            event.listen(self.sync_engine, "connect", _sqlite_pragmas)
        self._threads = ThreadPoolExecutor(1 if self.dialect == "sqlite" else _POOL_SIZE,
                                           thread_name_prefix="database")
        """One thread per pooled connection (SQLite has one writer, so one thread)."""
        self._turnstile = Turnstile() if self.dialect == "sqlite" else None
        """SQLite takes one writer at a time; in-process transactions queue here instead of meeting the file lock and
        sleeping in SQLite's busy handler (whose backoff grows to 100 ms a try: seconds under load), urgent ones (the
        accept that acks the platform) ahead of the turns'."""

    @property
    def engine(self) -> AsyncEngine:
        """The async engine (`transaction()`, `session()`, the migrations), made at first use."""
        return self._async_side()[0]

    def _async_side(self) -> tuple[AsyncEngine, async_sessionmaker[AsyncSession]]:
        if self._async is None:
            from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

            engine = create_async_engine(self.url, **_defaults(self.url), **self._engine_options)
            if self.dialect == "sqlite":
                event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
            self._async = engine, async_sessionmaker(engine, expire_on_commit=False)
        return self._async

    @asynccontextmanager
    async def session(self) -> AsyncGenerator[AsyncSession, None]:
        """One committed transaction; use `transaction()` when the work can simply be retried."""
        async with self._async_side()[1]() as session, session.begin():
            yield session

    async def transaction(self, work: Callable[[AsyncSession], Awaitable[T]], *, urgent: bool = False) -> T:
        """Run `work` in one transaction, again after a conflict or a lost connection (a restart, a failover).

        `work` must be safe to run twice: a connection lost at COMMIT leaves unknown whether it landed.
        """
        async def once() -> T:
            async with self._turn(urgent), self.session() as session:
                return await work(session)
        return await _retried(once)

    async def run(self, work: Callable[[Connection], T], *, urgent: bool = False, single: bool = False) -> T:
        """Run the synchronous `work` in one transaction on a worker thread, again after a conflict or a lost
        connection (so, as for `transaction()`, it must be safe to run twice). `single`: `work` runs one statement,
        which is its own transaction: no BEGIN and COMMIT around it (two round trips fewer on PostgreSQL). `work`
        only runs statements; it must not touch the event loop. Work that must commit together is one `work`."""
        if self.sync_engine is None:
            async def in_session(session: AsyncSession) -> T:
                return await (await session.connection()).run_sync(work)
            return await self.transaction(in_session, urgent=urgent)
        loop = asyncio.get_running_loop()

        async def once() -> T:
            async with self._turn(urgent):
                running = loop.run_in_executor(self._threads, self._committed, work, single)
                try:
                    return await asyncio.shield(running)
                except asyncio.CancelledError:  # the thread goes on: keep SQLite's turn until it has finished
                    await asyncio.wait([running])
                    raise
        return await _retried(once)

    def _committed(self, work: Callable[[Connection], T], single: bool) -> T:
        assert self.sync_engine is not None
        if single:
            with self.sync_engine.connect() as connection:
                return work(connection.execution_options(isolation_level="AUTOCOMMIT"))
        with self.sync_engine.begin() as connection:
            return work(connection)

    def _turn(self, urgent: bool) -> contextlib.AbstractAsyncContextManager[None]:
        return self._turnstile.turn(urgent) if self._turnstile is not None else contextlib.nullcontext()

    async def create_all(self) -> None:
        """Create the tables directly (tests); deployments run the Alembic migrations."""
        async with self.engine.begin() as conn:
            await conn.run_sync(metadata.create_all)

    async def close(self) -> None:
        if self._async is not None:
            await self._async[0].dispose()
        if self.sync_engine is not None:
            self.sync_engine.dispose()
        self._threads.shutdown(wait=False)


class Turnstile:
    """One holder at a time; waiters in order of arrival, the urgent ones first."""

    def __init__(self) -> None:
        self._held = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._normal: deque[asyncio.Future[None]] = deque()

    @contextlib.asynccontextmanager
    async def turn(self, urgent: bool = False) -> AsyncGenerator[None, None]:
        await self._acquire(urgent)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, urgent: bool) -> None:
        if not self._held and not self._urgent and not self._normal:
            self._held = True
            return
        waiter = asyncio.get_running_loop().create_future()
        queue = self._urgent if urgent else self._normal
        queue.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed the turn just as it was cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    queue.remove(waiter)
            raise

    def _release(self) -> None:
        for queue in (self._urgent, self._normal):
            while queue:
                waiter = queue.popleft()
                if not waiter.done():
                    waiter.set_result(None)  # the turn passes on; `_held` stays True
                    return
        self._held = False


async def _retried(once: Callable[[], Awaitable[T]]) -> T:
    """`once`, again after a transient conflict or a lost connection: five tries, backing off between them."""
    for attempt in range(1, _RETRIES + 1):
        try:
            return await once()
        except (OperationalError, DBAPIError) as exc:
            lost = is_connection_error(exc)
            if attempt == _RETRIES or not (lost or _conflict(exc)):
                raise
            log.info("%s, retrying (attempt %d): %s", "database connection lost" if lost
                     else "transient database conflict", attempt, exc.orig)
            delay = _CONNECTION_BACKOFF * 2 ** (attempt - 1) if lost else _CONFLICT_BACKOFF * attempt
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")


DIALECTS = {"postgresql": "sqlalchemy.dialects.postgresql", "sqlite": "sqlalchemy.dialects.sqlite"}
"""Each dialect's package, found by name: a deployment loads only its own (its engine already has), so SQLite's
does not carry PostgreSQL's (2 MB)."""


def insert_for(dialect: str) -> Callable[..., Any]:
    """The dialect's `INSERT` that knows `ON CONFLICT` (both spell it the same; the core `insert` does not)."""
    return importlib.import_module(DIALECTS.get(dialect, DIALECTS["sqlite"])).insert


def _defaults(url: str) -> dict[str, Any]:
    if url.startswith("sqlite"):
        return {"connect_args": {"timeout": 30}}
    return {"pool_pre_ping": True, "pool_size": _POOL_SIZE, "max_overflow": _POOL_SIZE}


def _sync_engine(url: str, engine_options: dict[str, Any]) -> Engine | None:
    parsed = make_url(url)
    driver = _SYNC_DRIVERS.get(parsed.drivername)
    if driver is None or (parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")):
        return None  # `run()` takes the async path
    options = _defaults(url) | engine_options
    if parsed.get_backend_name() == "postgresql":
        # No ping before each checkout (a round trip per transaction, four a turn): a connection a restart ended
        # fails its first statement as a lost connection, which `run()` retries on a fresh one.
        options |= {"pool_size": _POOL_SIZE, "max_overflow": 0, "pool_pre_ping": False}
    return create_engine(parsed.set(drivername=driver), **options)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def is_connection_error(exc: BaseException) -> bool:
    """The database could not be reached, or dropped the connection: not a fault of the query."""
    if not isinstance(exc, DBAPIError):
        return False
    code = getattr(exc.orig, "sqlstate", None) or ""
    if exc.connection_invalidated or code.startswith(_CONNECTION_LOST):
        return True
    # psycopg names no SQLSTATE when it cannot connect at all ("connection failed: … Connection refused")
    return not code and isinstance(exc, OperationalError) and type(exc.orig).__module__.startswith("psycopg")


def _conflict(exc: DBAPIError) -> bool:
    code = getattr(exc.orig, "sqlstate", None)
    return code in {"40001", "40P01"} or "database is locked" in str(exc.orig).lower()
