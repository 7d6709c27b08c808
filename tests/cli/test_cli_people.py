"""`gateway identities` and `gateway memory` as an admin uses them."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from adapters.base import Speaker
from capabilities.memory_files.store import MemoryNotes
from capabilities.run import MemoryOwner
from gateway.cli.main import app
from gateway.pipeline.conversations import Conversations
from storage.db import Database
from storage.migrate import upgrade
from tests.support.people_harness import identity_rows, stored_notes


def seeded(database_url: str) -> dict[str, int]:
    """Alice on Telegram and Slack, Bob on Slack, each with notes for two agents, and one room note."""
    async def seed() -> dict[str, int]:
        db = Database(database_url)
        try:
            await upgrade(db)
            ids = {name: await Conversations(db).identity(Speaker(platform=platform, workspace=workspace,  # type: ignore[arg-type]
                                                                   platform_user_id=user, display_name=display,
                                                                   handle=handle))
                   for name, platform, workspace, user, display, handle in (
                       ("alice-tg", "telegram", "", "1001", "Alice", "alice"),
                       ("alice-slack", "slack", "T0TEAM", "U1", "Alice", None),
                       ("bob", "slack", "T0TEAM", "U2", "Bob", "bob"))}
            notes = MemoryNotes(db)
            for name, identity in ids.items():
                for agent in ("alpha", "beta"):
                    await notes.write(agent, MemoryOwner(kind="identity", key=str(identity)), f"{name}.md", "x")
            await notes.write("alpha", MemoryOwner(kind="room", key="slack:helper:C1"), "team.md", "x")
            return ids
        finally:
            await db.close()
    return asyncio.run(seed())


@pytest.fixture
def admin(database_url: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("DATABASE_URL", database_url)
    return CliRunner()


def test_identities_lists_everyone_with_their_platform_and_person(admin: CliRunner, database_url: str) -> None:
    ids = seeded(database_url)
    result = admin.invoke(app, ["identities"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 3
    [alice_tg] = [line for line in lines if line.split()[0] == str(ids["alice-tg"])]
    assert "telegram" in alice_tg and "@alice" in alice_tg and alice_tg.endswith("unlinked")
    assert any("slack/T0TEAM" in line and "Bob" in line for line in lines)


def test_link_and_unlink_from_the_command_line(admin: CliRunner, database_url: str) -> None:
    ids = seeded(database_url)
    linked = admin.invoke(app, ["identities", "link", str(ids["alice-tg"]), str(ids["alice-slack"])])
    assert linked.exit_code == 0, linked.output
    rows = asyncio.run(identity_rows(database_url))
    person = rows["1001"].person_id
    assert person is not None and rows["U1"].person_id == person and rows["U2"].person_id is None
    assert f"person {person}" in admin.invoke(app, ["identities", "list"]).output
    unlinked = admin.invoke(app, ["identities", "unlink", str(ids["alice-slack"])])
    assert unlinked.exit_code == 0 and asyncio.run(identity_rows(database_url))["U1"].person_id is None


def test_unknown_identity_is_named_and_exits_1(admin: CliRunner, database_url: str) -> None:
    seeded(database_url)
    result = admin.invoke(app, ["identities", "link", "1", "999"])
    assert result.exit_code == 1 and "no identity with id 999" in result.output


def test_memory_delete_for_a_person_reaches_every_linked_account_and_every_agent(
        admin: CliRunner, database_url: str) -> None:
    ids = seeded(database_url)
    admin.invoke(app, ["identities", "link", str(ids["alice-tg"]), str(ids["alice-slack"])])
    person = asyncio.run(identity_rows(database_url))["1001"].person_id
    result = admin.invoke(app, ["memory", "delete", "--person", str(person), "--yes"])
    assert result.exit_code == 0, result.output
    assert "deleted 4 note(s)" in result.output
    remaining = {(owner_kind, path) for _, owner_kind, _, path, _ in asyncio.run(stored_notes(database_url))}
    assert remaining == {("identity", "bob.md"), ("room", "team.md")}


def test_memory_delete_for_an_unlinked_identity_asks_first(admin: CliRunner, database_url: str) -> None:
    ids = seeded(database_url)
    declined = admin.invoke(app, ["memory", "delete", "--identity", str(ids["bob"])], input="n\n")
    assert declined.exit_code == 1 and len(asyncio.run(stored_notes(database_url))) == 7
    confirmed = admin.invoke(app, ["memory", "delete", "--identity", str(ids["bob"])], input="y\n")
    assert "deleted 2 note(s)" in confirmed.output
    assert all(path != "bob.md" for *_, path, _ in asyncio.run(stored_notes(database_url)))


def test_memory_clear_removes_one_agents_notes_only(admin: CliRunner, database_url: str) -> None:
    seeded(database_url)
    result = admin.invoke(app, ["memory", "clear", "--agent", "alpha", "--yes"])
    assert result.exit_code == 0 and "deleted 4 note(s) of agent alpha" in result.output
    assert {agent for agent, *_ in asyncio.run(stored_notes(database_url))} == {"beta"}
