"""Credential and system paths are refused with readable text, grep is filtered, and commands naming them refused;
attachments land in uploads/, skills in skills/, and files under output/ go to the chat."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from capabilities.run import FileRefused, Upload
from capabilities.sandbox.store import StoredWorkspaces
from storage.db import Database
from tests.support.workspace_runs import Posted, workspace_turn


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    tool: str
    args: dict[str, object]


REFUSED = [
    Case(id="read-etc", tool="read_file", args={"path": "/etc/passwd"}),
    Case(id="read-proc", tool="read_file", args={"path": "/proc/self/environ"}),
    Case(id="read-dotenv", tool="read_file", args={"path": "app/.env"}),
    Case(id="read-ssh", tool="read_file", args={"path": "/home/alice/.ssh/id_rsa"}),
    Case(id="write-pem", tool="write_file", args={"path": "certs/server.pem", "content": "x"}),
    Case(id="write-usr", tool="write_file", args={"path": "/usr/bin/evil", "content": "x"}),
    Case(id="write-aws", tool="write_file", args={"path": "home/.aws/credentials", "content": "x"}),
    Case(id="edit-key", tool="edit_file", args={"path": "deploy.key", "old_string": "a", "new_string": "b"}),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in REFUSED])
async def test_a_credential_or_system_path_is_refused_with_readable_text(case: Case) -> None:
    [answer] = await workspace_turn({}, [(case.tool, case.args)])
    assert answer.startswith("Error: Permission denied:"), answer


async def test_grep_leaves_out_matches_inside_a_credential_file_but_ls_still_names_it() -> None:
    """The .env is planted through the store, as a file that arrived by upload would be."""
    answers = await workspace_turn({}, [("write_file", {"path": "notes.md", "content": "token=public"}),
                                        ("grep", {"pattern": "token", "output_mode": "content"}),
                                        ("ls", {"path": "uploads"})],
                                   uploads=[Upload(name=".env", data=b"token=hunter2")])
    assert "notes.md" in answers[1] and "hunter2" not in answers[1] and ".env" not in answers[1]
    assert ".env" in answers[2]


async def test_a_command_naming_a_refused_path_is_refused() -> None:
    [answer] = await workspace_turn({}, [("execute", {"command": "cat /etc/shadow"})], approval={"execute": "never"})
    assert "Permission denied" in answer and "/etc/shadow" in answer


async def test_attachments_land_in_uploads() -> None:
    answers = await workspace_turn({}, [("ls", {"path": "/uploads"}), ("read_file", {"path": "/uploads/q3.csv"})],
                                   uploads=[Upload(name="../../q3.csv", data=b"region,total\nnorth,12")])
    assert "q3.csv" in answers[0] and "north,12" in answers[1]


async def test_skills_appear_as_files_beside_their_resources() -> None:
    skills = {"refunds": {"SKILL.md": b"# Refunds\nCheck the order first.", "scripts/check.py": b"print(1)"}}
    answers = await workspace_turn({}, [("read_file", {"path": "skills/refunds/SKILL.md"}),
                                        ("glob", {"pattern": "**/*.py"})], skills=skills)
    assert "Check the order first." in answers[0] and "/skills/refunds/scripts/check.py" in answers[1]


async def test_files_written_under_output_are_posted_to_the_chat_and_nothing_else_is() -> None:
    outbox = Posted()
    await workspace_turn({}, [("write_file", {"path": "output/report.md", "content": "# Q3"}),
                              ("write_file", {"path": "scratch.md", "content": "draft"})], outbox=outbox)
    assert outbox.files == [("report.md", b"# Q3", "text/markdown")]


async def test_an_output_file_left_unchanged_is_not_posted_again(db: Database) -> None:
    documents = StoredWorkspaces(db)
    first, second = Posted(), Posted()
    await workspace_turn({}, [("write_file", {"path": "output/report.md", "content": "# Q3"})], outbox=first,
                         documents=documents)
    await workspace_turn({}, [("ls", {"path": "output"})], outbox=second, documents=documents)
    assert len(first.files) == 1 and second.files == []


async def test_an_upload_too_large_for_the_workspace_is_left_out_and_the_run_goes_on() -> None:
    answers = await workspace_turn({}, [("ls", {"path": "uploads"})], max_bytes=10,
                                   uploads=[Upload(name="big.bin", data=b"x" * 100),
                                            Upload(name="small.txt", data=b"ok")])
    assert "small.txt" in answers[0] and "big.bin" not in answers[0]


@dataclass
class RefusesLarge(Posted):
    """An outbox whose chat takes files of at most `limit` bytes, as the outbox refuses one past a platform's cap."""

    limit: int = 10

    async def post_file(self, *, name: str, data: bytes, mime_type: str | None) -> None:
        if len(data) > self.limit:
            raise FileRefused(f"{name} is too large for this chat; it was not sent")
        await super().post_file(name=name, data=data, mime_type=mime_type)


async def test_an_output_file_the_chat_refuses_stays_in_the_workspace_and_the_others_are_posted() -> None:
    outbox = RefusesLarge()
    await workspace_turn({}, [("write_file", {"path": "output/a-big.csv", "content": "x" * 100}),
                              ("write_file", {"path": "output/b-small.md", "content": "ok"})],
                         outbox=outbox)  # returns: the run is not failed by the refusal
    assert outbox.files == [("b-small.md", b"ok", "text/markdown")]
