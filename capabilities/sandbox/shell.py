"""The local shell backend: each workspace a directory on this host, every command inside bubblewrap.

No containers: each command (and each file operation, run as a command) starts in a sandbox that holds only
this workspace, at `/workspace`, and the host's system files read-only (`capabilities/sandbox/seal.py`
says exactly which). The directory that holds the workspaces is never mounted, so no path spelling, `cd ..`
or symlink reaches a neighbour, and neither the gateway's working directory nor its database, config,
secrets or logs are in the view. On top: its own PID namespace and `/proc`, an environment rebuilt from a
fixed list, no capabilities, a private `/tmp`, and no network (a seccomp filter refuses every socket
connection, loopback and Unix sockets included) unless the connection sets `network: true`.

What it does not isolate, honestly: CPU, memory and disk are not limited (a command runs until its timeout,
a workspace can fill the disk); the kernel's own `/proc` files and the workspace's host path (in
`/proc/self/mountinfo`) are readable; and it needs user namespaces, which some hosts switch off (commands
then fail with `WorkspaceUnavailableError`).
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping
from pathlib import Path

from pydantic_ai.workspaces import (
    CommandResult,
    LocalWorkspaceBackend,
    SupportsCommands,
    Workspace,
    WorkspaceBackend,
    WorkspaceCommand,
    WorkspaceRef,
    WorkspaceUnavailableError,
)
from pydantic_ai_harness.bubblewrap_sandbox._seccomp import NETWORK_FILTER_BASE64

from capabilities.sandbox.facts import BubblewrapConnection
from capabilities.sandbox.seal import MOUNT, sandbox_args

_LAUNCH = 'filter=$1; shift; printf %s "$filter" | "$0" -d | { exec 3<&0 </dev/null; exec "$@"; }'
"""Decodes the seccomp filter onto descriptor 3, where `bwrap --seccomp 3` reads it, then starts `bwrap`."""


def directory_for(connection: BubblewrapConnection, key: str) -> Path:
    """The host directory of the workspace `key`: named by a hash, so no key can lead outside `root`."""
    return connection.root / hashlib.sha256(key.encode()).hexdigest()[:32]


class SealedShell(WorkspaceBackend, SupportsCommands):
    """Runs every command in a sandbox holding only `directory`, which it sees as `MOUNT`.

    It offers no native file methods, so `Workspace` runs its file operations as shell commands through
    `run`: they see what commands see, and a planted symlink leads nowhere outside."""

    def __init__(self, directory: Path, *, network: bool) -> None:
        self._host = LocalWorkspaceBackend(directory)
        self._directory = directory
        self._network = network
        self._started = False

    @property
    def ref(self) -> WorkspaceRef | None:
        return self._host.ref

    async def working_dir(self) -> str:
        return MOUNT

    async def run(self, command: WorkspaceCommand, *, shell: bool = False, env: Mapping[str, str] | None = None,
                  timeout: float | None = None) -> CommandResult:  # noqa: ASYNC109 (the workspace protocol's)
        argv = _argv(command, shell=shell)
        extra = [arg for name, value in (env or {}).items() for arg in ("--setenv", name, value)]
        result = await self._host.run(self._launch([*extra, "--", *argv]), timeout=timeout)
        if result.exit_code != 0 and not self._started:
            await self._probe()  # `bwrap` exits like the command when it cannot start, so tell the two apart once
        self._started = True
        return result

    def _launch(self, command: list[str]) -> list[str]:
        bwrap = [_program("bwrap"), *sandbox_args(self._directory, network=self._network), *command]
        if self._network:
            return bwrap
        return ["/bin/sh", "-c", _LAUNCH, _program("base64"), NETWORK_FILTER_BASE64, *bwrap]

    async def _probe(self) -> None:
        probe = await self._host.run(self._launch(["--", "true"]), timeout=30.0)
        if probe.exit_code != 0:
            raise WorkspaceUnavailableError("bubblewrap could not start a sandbox; install `bwrap` and allow it "
                                            f"to create user namespaces: {probe.stderr.strip()}")


def _argv(command: WorkspaceCommand, *, shell: bool) -> list[str]:
    if isinstance(command, str):
        if not shell:
            raise TypeError("a string command requires shell=True; pass an argv sequence otherwise")
        return ["sh", "-c", command]
    if shell:
        raise TypeError("an argv sequence cannot be combined with shell=True; pass a single command string")
    # Through `sh`, a missing program exits 127 as the workspace contract says, not with `bwrap`'s own 1.
    return ["sh", "-c", 'exec "$@"', "sh", *command]


def _program(name: str) -> str:
    """The host's `name` by absolute path, found on the gateway's own PATH (never inside a workspace)."""
    found = shutil.which(name)
    if found is None:
        raise WorkspaceUnavailableError(f"`{name}` is not on this host's PATH; bubblewrap workspaces need it")
    return found


def shell_workspace(connection: BubblewrapConnection, key: str) -> Workspace:
    """The workspace `key` on `connection`, its directory created when missing."""
    directory = directory_for(connection, key)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    return Workspace(SealedShell(directory, network=connection.network))


def remove_workspace(connection: BubblewrapConnection, key: str) -> None:
    shutil.rmtree(directory_for(connection, key), ignore_errors=True)
