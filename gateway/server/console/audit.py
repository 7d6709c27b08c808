"""What operators did in the console, and refused sign-ins: who, what, when; shown on the console's audit page."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, insert, select

from storage.db import Database
from storage.tables import CONSOLE_AUDIT, utcnow

log = logging.getLogger(__name__)

DETAIL_LIMIT = 2000


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEntry:
    operator: str
    action: str
    detail: str
    at: datetime


class ConsoleAudit:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, operator: str, action: str, detail: str = "") -> None:
        """Write one entry (and one log line without the detail, which may name a document or a tool's arguments)."""
        log.info("console: %s %s", operator, action)

        def work(connection: Connection) -> None:
            connection.execute(insert(CONSOLE_AUDIT).values(operator=operator[:64], action=action[:64],
                                                            detail=detail[:DETAIL_LIMIT], at=utcnow()))
        await self._db.run(work, single=True)

    async def recent(self, *, limit: int = 100) -> list[AuditEntry]:
        def work(connection: Connection) -> list[AuditEntry]:
            rows = connection.execute(select(CONSOLE_AUDIT).order_by(CONSOLE_AUDIT.c.id.desc()).limit(limit))
            return [AuditEntry(operator=row.operator, action=row.action, detail=row.detail, at=row.at)
                    for row in rows]
        return await self._db.run(work, single=True)
