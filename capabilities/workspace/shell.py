"""The local shell backend: each workspace a directory on this host, every command inside bubblewrap.

No containers: the harness's `BubblewrapWorkspace` runs each command (and each file operation, as a
command) with the host's files read-only, a private `/tmp`, no network (a seccomp filter refuses every
socket connection, loopback included), no capabilities, and only the workspace's own directory writable.
On top of the harness's defaults the sandbox gets its own PID namespace, so `/proc` shows the command's
own processes and not the gateway's environment, and an empty tmpfs over the operator's `hidden`
directories (`/root`, `/home`), where credentials usually live.

What it does not isolate, honestly: any other host file the gateway's user can read stays readable (run
the gateway as a dedicated user and keep secrets out of world-readable files); CPU, memory and disk are
not limited (a command runs until its timeout, a workspace can fill the disk); and it needs user
namespaces, which some hosts switch off (commands then fail with `WorkspaceUnavailableError`).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace
from pydantic_ai_harness.bubblewrap_sandbox import BubblewrapWorkspace

from capabilities.workspace_facts import BubblewrapConnection

INSTALL_LINE = "apt-get install -y bubblewrap"


def directory_for(connection: BubblewrapConnection, key: str) -> Path:
    """The host directory of the workspace `key`: named by a hash, so no key can lead outside `root`."""
    return connection.root / hashlib.sha256(key.encode()).hexdigest()[:32]


def bubblewrap_args(connection: BubblewrapConnection, working_dir: Path) -> list[str]:
    hidden = [path for path in connection.hidden
              if Path(path).is_dir() and not working_dir.is_relative_to(path)]
    return ["--unshare-pid", *(arg for path in hidden for arg in ("--tmpfs", path))]


def shell_workspace(connection: BubblewrapConnection, key: str) -> Workspace:
    """The workspace `key` on `connection`, its directory created when missing."""
    working_dir = directory_for(connection, key)
    working_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    return BubblewrapWorkspace(Workspace(LocalWorkspaceBackend(working_dir)),
                               bwrap_args=bubblewrap_args(connection, working_dir))


def bubblewrap_missing() -> str | None:
    """Why this host cannot run the shell backend, or None when it can."""
    if shutil.which("bwrap") is None:
        return f"bubblewrap is not installed on this host; install it with `{INSTALL_LINE}`"
    return None


def remove_workspace(connection: BubblewrapConnection, key: str) -> None:
    shutil.rmtree(directory_for(connection, key), ignore_errors=True)
