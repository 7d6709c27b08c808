"""Every `session_scope` shares a workspace with exactly whom the catalog says, kept in the database between turns."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from capabilities.sandbox.store import StoredWorkspaces
from storage.db import Database
from tests.support.workspace_runs import ALICE, BOB, Turn, slack, workspace_turn

WRITE = ("write_file", {"path": "notes.md", "content": "written in the first turn"})
READ = ("read_file", {"path": "notes.md"})

FIRST = Turn(address=slack("C1", "t1"), speaker=ALICE, run_id=1, user_key="person:7")


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    scope: str
    later: Turn
    shares: bool


CASES = [
    Case(id="run-same-conversation-next-turn", scope="run", later=Turn(address=slack("C1", "t1"), run_id=2,
                                                                         user_key="person:7"), shares=False),
    Case(id="conversation-same-thread-other-person", scope="conversation",
         later=Turn(address=slack("C1", "t1"), speaker=BOB, run_id=2, user_key="person:8"), shares=True),
    Case(id="conversation-other-thread-same-channel", scope="conversation",
         later=Turn(address=slack("C1", "t2"), run_id=2, user_key="person:7"), shares=False),
    Case(id="channel-other-thread-same-channel", scope="channel",
         later=Turn(address=slack("C1", "t2"), speaker=BOB, run_id=2, user_key="person:8"), shares=True),
    Case(id="channel-direct-message-is-its-own", scope="channel",
         later=Turn(address=slack("D1", direct=True), run_id=2, user_key="person:7"), shares=False),
    Case(id="user-same-person-other-platform", scope="user",
         later=Turn(address=slack("C9", "t9"), run_id=2, user_key="person:7"), shares=True),
    Case(id="user-other-person-same-thread", scope="user",
         later=Turn(address=slack("C1", "t1"), speaker=BOB, run_id=2, user_key="person:8"), shares=False),
    Case(id="agent-everyone-everywhere", scope="agent",
         later=Turn(address=slack("C9", "t9"), speaker=BOB, run_id=2, user_key="person:8"), shares=True),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
async def test_a_scope_shares_the_workspace_with_exactly_whom_the_catalog_says(case: Case, db: Database) -> None:
    documents = StoredWorkspaces(db)
    config = {"session_scope": case.scope}
    await workspace_turn(config, [WRITE], turn=FIRST, documents=documents)
    [answer] = await workspace_turn(config, [READ], turn=case.later, documents=documents)
    assert ("written in the first turn" in answer) is case.shares, answer


async def test_a_run_scoped_workspace_is_deleted_when_its_run_ends(db: Database) -> None:
    documents = StoredWorkspaces(db)
    await workspace_turn({"session_scope": "run"}, [WRITE], turn=FIRST, documents=documents)
    [answer] = await workspace_turn({"session_scope": "run"}, [READ], turn=FIRST, documents=documents)
    assert "not found" in answer


async def test_files_persist_across_turns_and_an_edit_keeps_the_rest(db: Database) -> None:
    documents = StoredWorkspaces(db)
    await workspace_turn({}, [WRITE, ("write_file", {"path": "data/b.txt", "content": "b"})], turn=FIRST,
                         documents=documents)
    later = Turn(address=slack("C1", "t1"), run_id=2)
    await workspace_turn({}, [READ, ("edit_file", {"path": "notes.md", "old_string": "first",
                                                   "new_string": "1st"})], turn=later, documents=documents)
    answers = await workspace_turn({}, [READ, ("ls", {"path": "data"})], turn=Turn(run_id=3), documents=documents)
    assert "written in the 1st turn" in answers[0] and "b.txt" in answers[1]


async def test_two_runs_sharing_a_workspace_keep_each_others_files(db: Database) -> None:
    """Each run writes back only what it changed, so the later save does not erase the earlier one's file."""
    documents = StoredWorkspaces(db)
    await documents.save(FIRST.address.conversation_key, label="x", changed={}, directories=[])
    config = {"session_scope": "agent"}
    await workspace_turn(config, [("write_file", {"path": "a.md", "content": "from a"})], turn=FIRST,
                         documents=documents)
    await workspace_turn(config, [("write_file", {"path": "b.md", "content": "from b"})],
                         turn=Turn(speaker=BOB, run_id=2), documents=documents)
    answers = await workspace_turn(config, [("read_file", {"path": "a.md"}), ("read_file", {"path": "b.md"})],
                                   turn=Turn(run_id=3), documents=documents)
    assert "from a" in answers[0] and "from b" in answers[1]


async def test_a_state_workspace_refuses_a_write_past_its_cap(db: Database) -> None:
    documents = StoredWorkspaces(db)
    answers = await workspace_turn({}, [("write_file", {"path": "a.txt", "content": "x" * 60}),
                                        ("write_file", {"path": "b.txt", "content": "y" * 60})],
                                   documents=documents, max_bytes=100)
    assert answers[0].startswith("Wrote") and "workspace is full" in answers[1]


async def test_a_state_workspace_has_no_shell() -> None:
    answers = await workspace_turn({}, [("execute", {"command": "echo hi"})], approval={"execute": "never"})
    assert "does not support command execution" in answers[0]


async def test_execute_asks_by_default_and_writing_does_not() -> None:
    answers = await workspace_turn({}, [("write_file", {"path": "a.md", "content": "x"}),
                                        ("execute", {"command": "echo hi"})])
    assert answers == ["parked: execute"]


async def test_include_execute_off_removes_the_shell() -> None:
    answers = await workspace_turn({"include_execute": False}, [("execute", {"command": "echo hi"})])
    assert "Unknown tool name" in answers[0]


async def test_a_bot_binding_overrides_the_specs_scope(db: Database) -> None:
    """The spec says `agent`; this bot's binding narrows it to `conversation`, so another thread shares nothing."""
    documents = StoredWorkspaces(db)
    config = {"session_scope": "agent"}
    await workspace_turn(config, [WRITE], turn=FIRST, documents=documents, binding_scope="conversation")
    elsewhere = Turn(address=slack("C1", "t2"), run_id=2)
    [narrowed] = await workspace_turn(config, [READ], turn=elsewhere, documents=documents,
                                      binding_scope="conversation")
    [wide] = await workspace_turn(config, [READ], turn=elsewhere, documents=documents)
    assert "not found" in narrowed and "not found" in wide
