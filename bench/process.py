"""A bench bot's process, seen from outside: started, read in `/proc` (CPU, memory), and stopped."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")
BASELINE = os.environ.get("BENCH_BASELINE", "")
"""`base-sqlite` runs the gateway package found here (say `git archive <commit> | tar -x -C DIR`) with this bench."""
SHOW_ERRORS = bool(os.environ.get("BENCH_STDERR"))
"""Let the bots' processes write to this terminal's stderr (their logs and tracebacks), to see why one fails."""


def tree(pid: int) -> list[int]:
    """The process and its descendants."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
    return found


def cpu_seconds(pid: int) -> float:
    """utime + stime of the tree, and of its reaped children."""
    total = 0
    for member in tree(pid):
        with contextlib.suppress(OSError, IndexError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(fields[i]) for i in (11, 12, 13, 14))
    return total / TICK


def peak_rss_mib(pid: int) -> float:
    total = 0
    for member in tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
    return total / 1024


def rss_mib(pid: int) -> float:
    total = 0
    for member in tree(pid):
        with contextlib.suppress(OSError):
            total += int(Path(f"/proc/{member}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return total / 2**20


async def spawn(argv: list[str], *, baseline: bool = False) -> asyncio.subprocess.Process:
    path = f"{BASELINE}/_bench:{BASELINE}" if baseline else str(ROOT)
    workdir = f"{BASELINE}/_bench" if baseline else ROOT  # `-m` puts the working directory first on the path
    return await asyncio.create_subprocess_exec(*argv, cwd=workdir, env={**os.environ, "PYTHONPATH": path},
                                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=None if SHOW_ERRORS else subprocess.DEVNULL)


async def stop(process: asyncio.subprocess.Process) -> None:
    process.terminate()
    try:
        async with asyncio.timeout(30):
            await process.wait()
    except TimeoutError:
        process.kill()
        await process.wait()
