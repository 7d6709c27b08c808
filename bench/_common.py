"""What both benchmarks share: percentiles, memory readings, the machine, and scratch databases."""

from __future__ import annotations

import math
import os
import platform
import resource
import sqlite3
import tempfile
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg import sql

DEFAULT_POSTGRES = os.environ.get("TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile: the smallest value with at least `pct` % of the values at or below it."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def ms(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds * 1000:.1f} ms"


def max_rss_mib() -> float:
    """Peak resident set size of this process so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    """Resident set size now, from /proc (Linux); NaN elsewhere."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return math.nan
    return pages * resource.getpagesize() / 2**20


def cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.machine()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
                platform.machine())


def machine() -> str:
    load = "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()) if hasattr(os, "getloadavg") else ""
    return (f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC · {platform.system()} {platform.release()} · "
            f"{os.cpu_count()} CPUs {cpu_model()} ({load}) · Python {platform.python_version()} · "
            f"SQLite {sqlite3.sqlite_version}")


@asynccontextmanager
async def sqlite_database() -> AsyncIterator[str]:
    """A URL to a fresh SQLite file in a temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="gateway-bench-") as workdir:
        yield f"sqlite+aiosqlite:///{Path(workdir) / 'gateway.db'}"


async def postgres_reachable(url: str) -> str | None:
    """The server version when `url` answers within 3 s, else None."""
    try:
        async with await psycopg.AsyncConnection.connect(url, connect_timeout=3) as conn:
            row = await (await conn.execute("SHOW server_version")).fetchone()
    except psycopg.Error:
        return None
    return str(row[0]) if row else "?"


@asynccontextmanager
async def postgres_schema(url: str) -> AsyncIterator[str]:
    """A URL to an empty schema of its own in the PostgreSQL database at `url`, dropped afterwards."""
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        base = url.replace("postgresql://", "postgresql+psycopg://", 1)
        separator = "&" if "?" in base else "?"
        yield f"{base}{separator}options=-csearch_path%3D{schema}"
    finally:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
