"""Which replicas are alive and which bots' transports each holds: each replica serving the console writes its own
row every few seconds; the overview reads the rows seen lately."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, select

from storage.db import Database, insert_for
from storage.tables import REPLICAS, utcnow

BEAT = 5.0
"""Seconds between two heartbeats of one replica."""
ALIVE = timedelta(seconds=3 * BEAT)
"""A replica not seen for this long is shown as gone."""
FORGOTTEN = timedelta(days=1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Replica:
    id: str
    started_at: datetime
    seen_at: datetime
    holding: tuple[str, ...]

    @property
    def alive(self) -> bool:
        return utcnow() - self.seen_at < ALIVE


class Replicas:
    def __init__(self, db: Database, *, replica_id: str, holding: Callable[[], list[str]]) -> None:
        self._db = db
        self.replica_id = replica_id
        self._holding = holding
        self._started = utcnow()
        self._told: list[str] | None = None
        """What the last heartbeat said this replica holds."""

    async def due(self) -> float | None:
        """0 when what this replica holds changed since its last heartbeat (beat now), else None (on the interval)."""
        return 0.0 if self._holding() != self._told else None

    async def beat(self) -> None:
        """Say this replica is alive, with what it holds; forget replicas gone for a day."""
        holding = self._holding()

        def work(connection: Connection) -> None:
            now = utcnow()
            insert = insert_for(connection.dialect.name)
            values = {"id": self.replica_id, "started_at": self._started, "seen_at": now, "holding": holding}
            connection.execute(insert(REPLICAS).values(**values).on_conflict_do_update(
                index_elements=["id"], set_={"seen_at": now, "holding": holding}))
            connection.execute(delete(REPLICAS).where(REPLICAS.c.seen_at < now - FORGOTTEN))
        await self._db.run(work)
        self._told = holding

    async def seen(self) -> list[Replica]:
        def work(connection: Connection) -> list[Replica]:
            rows = connection.execute(select(REPLICAS).order_by(REPLICAS.c.started_at))
            return [Replica(id=row.id, started_at=row.started_at, seen_at=row.seen_at,
                            holding=tuple(str(bot) for bot in row.holding)) for row in rows]
        return await self._db.run(work, single=True)
