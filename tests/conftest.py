"""Shared fixtures: a fresh database per test on SQLite and PostgreSQL, both caches, and the platform fakes."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
import pytest_asyncio
from pydantic_ai import models

from storage.cache import LocalCache
from storage.db import Database
from storage.redis_cache import RedisCache
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.hang_report import reported_if_hung

models.ALLOW_MODEL_REQUESTS = False

POSTGRES = os.environ.get("TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A URL to an empty database: a SQLite file, or a PostgreSQL schema of its own."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
        return
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(POSTGRES, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        base = POSTGRES.replace("postgresql://", "postgresql+psycopg://", 1)
        yield f"{base}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """For tests about behaviour that does not depend on the database."""
    return f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"


@pytest_asyncio.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    await database.create_all()
    yield database
    checked_out = database.engine.pool.checkedout()
    await database.close()
    assert checked_out == 0, f"{checked_out} database connection(s) left checked out"


@pytest.fixture(params=["redis", "local"])
def redis_url(request: pytest.FixtureRequest) -> str | None:
    """The cache a gateway under test uses: real Redis, or the single-process fallback."""
    return REDIS if request.param == "redis" else None


@pytest_asyncio.fixture
async def cache(redis_url: str | None) -> AsyncIterator[RedisCache | LocalCache]:
    if redis_url is None:
        instance: RedisCache | LocalCache = LocalCache()
    else:
        instance = RedisCache(redis_url, prefix=f"test-{uuid.uuid4().hex[:8]}:")
    yield instance
    await instance.close()


@pytest_asyncio.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    """A fresh local Telegram server on an OS-assigned port."""
    async with FakeTelegram() as fake:
        yield fake


@pytest_asyncio.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    """A fresh local Slack server on an OS-assigned port."""
    async with FakeSlack() as fake:
        yield fake


@pytest_asyncio.fixture
async def mattermost() -> AsyncIterator[FakeMattermost]:
    """A fresh local Mattermost server on an OS-assigned port."""
    async with FakeMattermost() as fake:
        yield fake


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test about to be ended by pytest-timeout first prints where its asyncio tasks wait (`hang_report`)."""
    marker = item.get_closest_marker("timeout")
    timeout = float(marker.args[0]) if marker is not None and marker.args else float(item.config.getini("timeout") or 0)
    with reported_if_hung(timeout):
        yield
