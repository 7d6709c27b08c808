"""A `sandboxd` on loopback: pydantic-ai-backend's own service, with a sandbox that is a local process instead of
a Docker container (the service's `sandbox_builder` seam), so the real wire protocol is spoken end to end."""

from __future__ import annotations

import asyncio
import functools
import socket
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from pydantic_ai_backends import CommandOutcome
from pydantic_ai_backends.remote.server import SandboxdConfig, create_app

from capabilities.sandbox.seal import bubblewrap_missing

TOKEN = "service-token-for-tests"
WORK_DIR = "/tmp/work"


@functools.cache
def bubblewrap_unusable() -> str | None:
    """Why bubblewrap cannot sandbox a command on this host, or None when it can (tests that need it skip)."""
    missing = bubblewrap_missing()
    if missing is not None:
        return missing
    ran = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-user", "--unshare-net", "true"],
                         capture_output=True, check=False)
    return None if ran.returncode == 0 else f"bwrap cannot create namespaces here: {ran.stderr.decode().strip()}"


@dataclass
class LocalSandbox:
    """Runs each command in its session's host directory, mounted at the service's work dir by bubblewrap."""

    directory: Path
    ran: list[Sequence[str]] = field(default_factory=list)

    async def run_command(self, argv: Sequence[str], *, run_id: str, env: Mapping[str, str] | None = None,
                          timeout: float | None = None,  # noqa: ASYNC109 - the CommandRunner protocol's own
                          output_limit: int | None = None) -> CommandOutcome:
        self.ran.append(list(argv))
        self.directory.mkdir(parents=True, exist_ok=True)
        bwrap = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                 "--bind", str(self.directory), WORK_DIR, "--chdir", WORK_DIR, "--unshare-net", "--"]
        process = await asyncio.create_subprocess_exec(*bwrap, *argv, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.PIPE)
        stdout, stderr = await process.communicate()
        return CommandOutcome(stdout=stdout.decode(errors="replace"), stderr=stderr.decode(errors="replace"),
                              exit_code=process.returncode)

    async def stop_command(self, run_id: str) -> None:
        return None

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)

    def is_alive(self) -> bool:
        return True

    def stop(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class FakeSandboxd:
    url: str
    root: Path
    sandboxes: dict[str, LocalSandbox]


@asynccontextmanager
async def running_sandboxd(root: Path) -> AsyncIterator[FakeSandboxd]:
    sandboxes: dict[str, LocalSandbox] = {}

    def build(session_id: str, _runtime: Any) -> LocalSandbox:
        sandbox = sandboxes[session_id] = LocalSandbox(directory=root / session_id / "workspace")
        return sandbox

    config = SandboxdConfig(token=TOKEN, runtimes={"python": "python:3.12-slim", "node": "node:22-slim"},
                            default_runtime="python", workspace_root=str(root), work_dir=WORK_DIR, prewarm=False)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # connections wait in the backlog until the service has started, so nothing polls for it
    server = uvicorn.Server(uvicorn.Config(create_app(config, sandbox_builder=build), log_level="warning",
                                           lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        yield FakeSandboxd(url=f"http://127.0.0.1:{listener.getsockname()[1]}", root=root, sandboxes=sandboxes)
    finally:
        server.should_exit = True
        await task
