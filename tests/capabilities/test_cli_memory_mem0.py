"""`gateway memory delete` deletes the person's memories in mem0 too, for every agent applied with `memory_mem0`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapters.base import Speaker
from gateway.cli.main import app
from gateway.pipeline.conversations import Conversations
from storage.db import Database
from storage.migrate import upgrade
from storage.models import AgentRow
from tests.support.fakes.mem0 import FakeMem0, self_signed

KEY = "m0-sk-cli-secret-2207"


@contextmanager
def served(fake: FakeMem0) -> Iterator[FakeMem0]:
    """The fake on a loop of its own thread, since the command runs its own `asyncio.run`."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def main() -> None:
        loop.run_until_complete(fake.__aenter__())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(fake.__aexit__())

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    ready.wait(5)
    try:
        yield fake
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def seeded(database_url: str, base_url: str) -> int:
    """Alice's identity, and agent `alpha` applied with `memory_mem0` on the self-hosted server at `base_url`."""
    async def seed() -> int:
        db = Database(database_url)
        try:
            await upgrade(db)
            identity = await Conversations(db).identity(Speaker(platform="telegram", platform_user_id="1001",
                                                                display_name="Alice"))
            entry = {"id": "memory_mem0", "secret_id": "MEM0_KEY", "config": {"base_url": base_url}}
            async with db.session() as session:
                session.add(AgentRow(name="alpha", spec={"name": "alpha", "model": "test", "capabilities": [entry]}))
            return identity
        finally:
            await db.close()
    return asyncio.run(seed())


@pytest.fixture
def fake(tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMem0]:
    cert, key = self_signed(tmp_path)
    for name, value in {"DATABASE_URL": sqlite_url, "MEM0_KEY": KEY, "MEM0_ALLOWED_HOSTS": "127.0.0.1",
                        "MEM0_CA_BUNDLE": str(cert), "GATEWAY_DEPLOYMENT": "acme"}.items():
        monkeypatch.setenv(name, value)
    with served(FakeMem0(dialect="self_hosted", key=KEY, cert_file=cert, key_file=key)) as server:
        yield server


def test_memory_delete_deletes_in_mem0_for_every_binding_agent(fake: FakeMem0, sqlite_url: str) -> None:
    identity = seeded(sqlite_url, fake.url)
    fake.memories[f"acme:alpha:identity:{identity}"] = ["Alice likes tea."]
    result = CliRunner().invoke(app, ["memory", "delete", "--identity", str(identity), "--yes"])
    assert result.exit_code == 0, result.output
    assert [(r.method, r.path, r.query) for r in fake.received] == [
        ("DELETE", "/memories", {"user_id": f"acme:alpha:identity:{identity}"})]
    assert fake.memories == {}


def test_memory_delete_says_which_agent_mem0_did_not_answer_for(fake: FakeMem0, sqlite_url: str) -> None:
    identity = seeded(sqlite_url, fake.url)
    fake.status = 503
    result = CliRunner().invoke(app, ["memory", "delete", "--identity", str(identity), "--yes"])
    assert result.exit_code == 1
    assert "mem0 memories of agent alpha" in result.output and "HTTP 503" in result.output
    assert KEY not in result.output
