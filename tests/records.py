"""What a gateway under test committed to its database, read back the way an operator's query would."""

from __future__ import annotations

from sqlalchemy import select

from storage.db import Database
from storage.models import ApprovalRow, InboxRow


async def inbox_rows(database_url: str) -> list[InboxRow]:
    """Every accepted (or rejected) platform event, oldest first."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(InboxRow).order_by(InboxRow.id))).scalars())
    finally:
        await db.close()


async def approval_statuses(database_url: str) -> list[str]:
    """The status of every approval asked for, oldest first."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(ApprovalRow.status).order_by(ApprovalRow.created_at))).scalars())
    finally:
        await db.close()
