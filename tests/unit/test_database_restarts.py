"""A PostgreSQL restart ends every server connection: the pool hands out no dead one, and a transaction whose
connection dies under it runs again on a new one."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from tests.conftest import POSTGRES

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


def terminate(application_name: str) -> int:
    """End the server processes of the named connections, as a restart would; how many there were."""
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        return len(admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                 "WHERE application_name = %s", (application_name,)).fetchall())


async def test_the_pool_replaces_connections_a_restart_ended(database_url: str) -> None:
    name = f"gw-{uuid.uuid4().hex[:12]}"
    db = Database(f"{database_url}&application_name={name}")
    try:
        async with db.session() as session:  # no retry here: only the pool's check stands between us and a dead one
            await session.execute(text("SELECT 1"))
        assert terminate(name) == 1, "the pooled connection was open on the server"
        async with db.session() as session:
            assert (await session.execute(text("SELECT 2"))).scalar_one() == 2
    finally:
        await db.close()


async def test_a_turn_statement_after_a_restart_runs_again_on_a_new_connection(database_url: str) -> None:
    """`Database.run` pings no connection before using it: the first statement on one a restart ended fails as a
    lost connection, and the transaction runs again on a fresh one."""
    name = f"gw-{uuid.uuid4().hex[:12]}"
    db = Database(f"{database_url}&application_name={name}")
    try:
        assert await db.run(lambda connection: connection.execute(text("SELECT 1")).scalar_one()) == 1
        assert terminate(name) == 1, "the pooled connection was open on the server"
        assert await db.run(lambda connection: connection.execute(text("SELECT 2")).scalar_one()) == 2
    finally:
        await db.close()


@pytest.mark.parametrize("path", ["transaction", "run"])
async def test_a_transaction_whose_connection_dies_runs_again(database_url: str, path: str) -> None:
    """Through either helper: `transaction()` (async work on the async engine) and `run()` (the sync engine)."""
    name = f"gw-{uuid.uuid4().hex[:12]}"
    db = Database(f"{database_url}&application_name={name}")
    runs: list[int] = []

    def work(connection: Connection) -> int:
        runs.append(len(runs) + 1)
        connection.execute(text("SELECT 1"))  # the connection is checked out, past the pool's check
        if len(runs) == 1:
            terminate(name)  # mid-transaction: nothing but running it again can save it
        return int(connection.execute(text("SELECT 7")).scalar_one())

    async def through_the_session(session: AsyncSession) -> int:
        return await session.run_sync(lambda synced: work(synced.connection()))

    try:
        assert await (db.transaction(through_the_session) if path == "transaction" else db.run(work)) == 7
    finally:
        await db.close()
    assert runs == [1, 2]
