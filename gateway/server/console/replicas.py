"""Which replicas are alive and which bots' transports each holds: each replica serving the console writes its own
row every few seconds; the overview reads the rows seen lately."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database, insert_for
from storage.models import ReplicaRow
from storage.tables import utcnow

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
        async def work(session: AsyncSession) -> None:
            now = utcnow()
            insert = insert_for(self._db.dialect)
            holding = self._holding()
            values = {"id": self.replica_id, "started_at": self._started, "seen_at": now, "holding": holding}
            await session.execute(insert(ReplicaRow).values(**values).on_conflict_do_update(
                index_elements=["id"], set_={"seen_at": now, "holding": values["holding"]}))
            await session.execute(delete(ReplicaRow).where(ReplicaRow.seen_at < now - FORGOTTEN))
            self._told = holding
        await self._db.transaction(work)

    async def seen(self) -> list[Replica]:
        async def work(session: AsyncSession) -> list[Replica]:
            rows = await session.execute(select(ReplicaRow).order_by(ReplicaRow.started_at))
            return [Replica(id=row.id, started_at=row.started_at, seen_at=row.seen_at,
                            holding=tuple(str(bot) for bot in row.holding)) for row in rows.scalars()]
        return await self._db.transaction(work)
