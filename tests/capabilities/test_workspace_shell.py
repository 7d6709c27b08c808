"""The local shell backend (bubblewrap, no containers): no network, the system read-only, one writable directory."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from capabilities.sandbox.facts import BubblewrapConnection, StoredWorkspace
from tests.support.fakes.sandboxd import bubblewrap_unusable
from tests.support.workspace_runs import Turn, slack, workspace_turn

pytestmark = pytest.mark.skipif(bubblewrap_unusable() is not None, reason=str(bubblewrap_unusable()))

SHELL = {"backend": "service", "session_scope": "conversation"}


class RunDocuments:
    """`state` workspaces in a dict, as `StoredWorkspaces` keeps them in the database."""

    def __init__(self) -> None:
        self.rows: dict[str, StoredWorkspace] = {}

    async def load(self, key: str) -> StoredWorkspace | None:
        return self.rows.get(key)

    async def save(self, key: str, *, label: str, changed: Mapping[str, Any | None],
                   directories: Sequence[str]) -> None:
        files = {**(self.rows[key].files if key in self.rows else {}), **changed}
        self.rows[key] = StoredWorkspace(files={p: d for p, d in files.items() if d is not None},
                                         directories=tuple(directories))

    async def delete(self, key: str) -> None:
        self.rows.pop(key, None)
UNGATED = {"execute": "never"}


def local(root: Path) -> dict[str, BubblewrapConnection]:
    return {"local": BubblewrapConnection(name="local", root=root)}


async def shell(root: Path, command: str, *, turn: Turn | None = None) -> str:
    [answer] = await workspace_turn(SHELL, [("execute", {"command": command})], connections=local(root),
                                    approval=UNGATED, turn=turn)
    return answer


async def test_a_command_cannot_reach_the_network_not_even_loopback(tmp_path: Path) -> None:
    reached = asyncio.Event()

    async def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.set()
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        answer = await shell(tmp_path, f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\"")
    assert "Command failed" in answer and "PermissionError" in answer
    assert not reached.is_set()


async def test_a_command_cannot_write_outside_its_directory(tmp_path: Path) -> None:
    name = f"escaped-{tmp_path.name}"
    outside, in_tmp, in_opt = str(tmp_path / name), f"/tmp/{name}", f"/opt/{name}"
    answer = await shell(tmp_path, f"echo x > {outside}; echo y > {in_tmp}; d=/o; touch ${{d}}{in_opt[2:]} /{name}")
    assert "Read-only file system" in answer
    assert [path for path in (outside, in_tmp, in_opt) if await asyncio.to_thread(os.path.exists, path)] == []


async def test_what_a_command_writes_in_its_directory_is_there_next_turn(tmp_path: Path) -> None:
    await shell(tmp_path, "mkdir -p output && echo 'total 12' > output/sum.txt")
    [answer] = await workspace_turn(SHELL, [("read_file", {"path": "output/sum.txt"})], connections=local(tmp_path),
                                    turn=Turn(run_id=2))
    assert "total 12" in answer


async def test_a_command_sees_neither_the_gateways_processes_nor_the_home_directories(tmp_path: Path) -> None:
    hidden = f"p=/pr; r=/ro; test -e ${{p}}oc/{os.getpid()} && echo visible; ls -A ${{r}}ot 2>/dev/null | wc -l"
    answer = await shell(tmp_path, hidden)
    assert "visible" not in answer and answer.strip() == "0"


async def test_two_conversations_get_two_directories(tmp_path: Path) -> None:
    await shell(tmp_path, "echo mine > mine.txt")
    other = Turn(address=slack("C1", "t2"), run_id=2)
    answer = await shell(tmp_path, "cat mine.txt", turn=other)
    assert "No such file" in answer


async def test_a_run_scoped_shell_workspace_is_removed_when_the_run_ends(tmp_path: Path) -> None:
    config = {**SHELL, "session_scope": "run"}
    [answer] = await workspace_turn(config, [("execute", {"command": "echo x > x.txt && ls"})],
                                    connections=local(tmp_path), approval=UNGATED)
    assert "x.txt" in answer
    assert await asyncio.to_thread(lambda: list(tmp_path.iterdir())) == []


async def test_changing_the_backend_starts_a_fresh_workspace(tmp_path: Path) -> None:
    documents = RunDocuments()
    await workspace_turn({}, [("write_file", {"path": "notes.md", "content": "in the database"})],
                         documents=documents)
    [answer] = await workspace_turn(SHELL, [("read_file", {"path": "notes.md"})], connections=local(tmp_path),
                                    documents=documents, turn=Turn(run_id=2))
    [again] = await workspace_turn({}, [("read_file", {"path": "notes.md"})], documents=documents,
                                   turn=Turn(run_id=3))
    assert "not found" in answer and "in the database" in again


async def test_a_connection_that_allows_the_network_reaches_loopback(tmp_path: Path) -> None:
    reached = asyncio.Event()

    async def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.set()
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    networked = {"local": BubblewrapConnection(name="local", root=tmp_path, network=True)}
    async with server:
        [answer] = await workspace_turn(SHELL, [("execute", {"command": f"python3 -c \"import socket; "
                                                             f"socket.create_connection(('127.0.0.1', {port}))\""})],
                                        connections=networked, approval=UNGATED)
        await asyncio.wait_for(reached.wait(), timeout=10)
    assert "Command failed" not in answer
