"""Runs `python -m gateway …` as an operator would: a real process, its exit status and what it printed."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
STARTS_WITHIN = 60.0
"""Seconds a `gateway serve` process may take to import, migrate a new database and make its first platform call:
about 2 s on a quiet machine, many times that beside a browser test and other replicas on two cores."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str

    @property
    def stderr_lines(self) -> list[str]:
        return self.stderr.splitlines()

    @property
    def stdout_lines(self) -> list[str]:
        return self.stdout.splitlines()


async def until_serving(port: int) -> None:
    """Until the `gateway serve` process on `port` answers its readiness probe 200 with every bot connected. A probe
    that cannot connect yet, or takes long to answer on a busy machine, is asked again within the one budget."""
    async with httpx.AsyncClient(timeout=None) as client, asyncio.timeout(STARTS_WITHIN):
        while True:
            try:
                ready = await client.get(f"http://127.0.0.1:{port}/readyz")
            except httpx.TransportError:
                await asyncio.sleep(0.1)  # the process is still starting: nothing to wait on but its port
                continue
            if ready.status_code == 200 and all(ready.json()["bots"].values()):
                return
            await asyncio.sleep(0.1)  # an HTTP probe has no change to wait on


def gateway_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the process: this tree first on the path, no Redis, no secrets file, then `extra`."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("REDIS_URL", "DATABASE_URL", "GATEWAY_SECRETS_FILE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**env, **(extra or {})}


async def run_gateway(*args: str, cwd: Path, env: Mapping[str, str] | None = None, stdin: str | None = None,
                      timeout: float = 60) -> Finished:  # noqa: ASYNC109
    """Run `gateway ARGS` to its end in `cwd`."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", *args, cwd=cwd, env=gateway_env(env),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        async with asyncio.timeout(timeout):
            out, err = await process.communicate(stdin.encode() if stdin is not None else None)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return Finished(returncode=process.returncode, stdout=out.decode(), stderr=err.decode())
