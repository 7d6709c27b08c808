"""The database as the `gateway` command opens it: failures named with the URL (no password) and the fix."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from gateway.cli.failures import OperatorError
from storage.db import Database

APPLY_FIRST = "run `gateway apply -c gateway.yaml` first"
UNDEFINED_TABLE = "42P01"
"""PostgreSQL's SQLSTATE for a table that does not exist."""


def shown(url: str) -> str:
    """The URL as it may be printed: the password replaced by ***."""
    return make_url(url).render_as_string(hide_password=True)


@asynccontextmanager
async def existing_database(url: str) -> AsyncIterator[Database]:
    """A database `gateway apply` has created; refuses, without creating a file, when there is none yet."""
    path = sqlite_file(url)
    if path is not None and not path.exists():
        raise OperatorError(f"no database yet at {path} (DATABASE_URL={shown(url)}): {APPLY_FIRST}")
    db = Database(url)
    try:
        with database_errors(url):
            yield db
    finally:
        await db.close()


@contextmanager
def database_errors(url: str) -> Iterator[None]:
    """Turns the driver's error into one line: tables missing (apply first), or the database out of reach."""
    try:
        yield
    except DBAPIError as exc:
        raise OperatorError(describe_database_error(url, exc)) from exc


def describe_database_error(url: str, exc: DBAPIError) -> str:
    reason = (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0]
    if "no such table" in reason or getattr(exc.orig, "sqlstate", None) == UNDEFINED_TABLE:
        return f"the database at {shown(url)} has no tables yet: {APPLY_FIRST}"
    return f"cannot use the database at {shown(url)}: {reason} — is it running, and is DATABASE_URL right?"


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL; None for other databases and in-memory SQLite."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)
