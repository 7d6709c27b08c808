"""The approvals table as a test reads and changes it, beside what crosses the wire."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from storage.db import Database
from storage.models import ApprovalRow, utcnow


async def approval_statuses(database_url: str) -> list[str]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(ApprovalRow.status).order_by(ApprovalRow.created_at))).scalars())
    finally:
        await db.close()


async def make_overdue(database_url: str) -> None:
    """Every pending approval's expiry, a minute ago, as if its time had passed."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            await session.execute(update(ApprovalRow).where(ApprovalRow.status == "pending")
                                  .values(expires_at=utcnow() - timedelta(minutes=1)))
    finally:
        await db.close()
