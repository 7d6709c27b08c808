"""The `service` backend against a sandboxd on loopback: one named session per workspace, kept across turns."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from capabilities.sandbox.facts import SandboxServiceConnection
from tests.support.fakes.sandboxd import TOKEN, bubblewrap_unusable, running_sandboxd
from tests.support.workspace_runs import Turn, slack, workspace_turn

pytestmark = pytest.mark.skipif(bubblewrap_unusable() is not None, reason=str(bubblewrap_unusable()))

SERVICE = {"backend": "service", "connection_id": "docker-host"}


def connections(url: str) -> dict[str, SandboxServiceConnection]:
    return {"docker-host": SandboxServiceConnection(name="docker-host", url=url, token=SecretStr(TOKEN),
                                                    runtimes=("python",))}


async def test_a_service_workspace_runs_commands_and_keeps_its_files_across_turns(tmp_path: Path) -> None:
    async with running_sandboxd(tmp_path) as sandboxd:
        first = await workspace_turn(SERVICE, [("write_file", {"path": "notes.md", "content": "kept"}),
                                               ("execute", {"command": "echo ran > ran.txt && cat notes.md"})],
                                     connections=connections(sandboxd.url), approval={"execute": "never"})
        later = await workspace_turn(SERVICE, [("read_file", {"path": "ran.txt"})],
                                     connections=connections(sandboxd.url), turn=Turn(run_id=2))
    assert first[1].strip() == "kept" and "ran" in later[0]
    assert len(sandboxd.sandboxes) == 1


async def test_another_conversation_gets_another_session(tmp_path: Path) -> None:
    async with running_sandboxd(tmp_path) as sandboxd:
        await workspace_turn(SERVICE, [("write_file", {"path": "notes.md", "content": "mine"})],
                             connections=connections(sandboxd.url))
        [answer] = await workspace_turn(SERVICE, [("read_file", {"path": "notes.md"})],
                                        connections=connections(sandboxd.url),
                                        turn=Turn(address=slack("C1", "t2"), run_id=2))
    assert "not found" in answer


async def test_a_refused_path_is_refused_on_the_service_too(tmp_path: Path) -> None:
    async with running_sandboxd(tmp_path) as sandboxd:
        answers = await workspace_turn(SERVICE, [("read_file", {"path": "/etc/passwd"}),
                                                 ("execute", {"command": "cat ~/.ssh/id_rsa"})],
                                       connections=connections(sandboxd.url), approval={"execute": "never"})
    assert all(answer.startswith("Error: Permission denied") for answer in answers), answers
    assert all("id_rsa" not in " ".join(argv) for s in sandboxd.sandboxes.values() for argv in s.ran)
