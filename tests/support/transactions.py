"""Counting a running gateway's database transactions: SQLAlchemy's engine events on the gateway's own engines.

The sweeps (approval expiry, inbox pruning, the outbox) run on their own clock whether anybody writes or not, so
their tasks are left out; everything else counts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event

from gateway.server.app import Gateway

SWEEP_LOOKS = ("SELECT min(outbox_files.claimed_until)",)
"""What a sweep asks through `Database.run`: on the database's own thread no task tells it from a turn's, so its
statement does (the outbox sweep's first look lands a second after the start, whenever a test counts then)."""


@dataclass
class Counted:
    begins: int = 0
    commits: int = 0
    statements: list[list[str]] = field(default_factory=list)
    sweep_looks: int = 0
    """Transactions of `SWEEP_LOOKS`, which `begins` and `commits` include."""

    @property
    def transactions(self) -> int:
        """What the counted work caused: every transaction but the sweeps' looks."""
        return self.begins - self.sweep_looks


@contextmanager
def counting(gateway: Gateway) -> Iterator[Counted]:
    assert gateway.db is not None and gateway.db.sync_engine is not None
    engines = (gateway.db.engine.sync_engine, gateway.db.sync_engine)  # `transaction()`'s and `run()`'s
    counted = Counted()

    def in_sweep() -> bool:
        try:
            task = asyncio.current_task()
        except RuntimeError:  # the database's own thread (`Database.run`), where no sweep runs
            return False
        return task is not None and task.get_name().startswith("sweep")

    def begin(conn: Any) -> None:
        if not in_sweep():
            counted.begins += 1
            counted.statements.append([])
            if conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT":
                counted.commits += 1  # one statement that commits on its own (`Database.run(single=True)`)

    def commit(_conn: Any) -> None:
        if not in_sweep():
            counted.commits += 1

    def statement(_conn: Any, _cursor: Any, sql: str, *_: Any) -> None:
        if not in_sweep() and counted.statements:
            counted.statements[-1].append(" ".join(sql.split())[:90])
            counted.sweep_looks += sql.startswith(SWEEP_LOOKS)

    for engine in engines:
        event.listen(engine, "begin", begin)
        event.listen(engine, "commit", commit)
        event.listen(engine, "before_cursor_execute", statement)
    try:
        yield counted
    finally:
        for engine in engines:
            event.remove(engine, "begin", begin)
            event.remove(engine, "commit", commit)
            event.remove(engine, "before_cursor_execute", statement)


def listed(counted: Counted) -> str:
    """Each transaction's statements, one line each: what a failed budget prints."""
    return "\n".join(f"{n}: {' | '.join(s)}" for n, s in enumerate(counted.statements, 1))
