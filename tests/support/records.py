"""What a gateway under test committed to its database, read back the way an operator's query would."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import select, update

from storage.db import Database
from storage.models import ApprovalRow, InboxRow, ParkedRunRow, RunRow, utcnow


async def inbox_rows(database_url: str) -> list[InboxRow]:
    """Every accepted (or rejected) platform event, oldest first."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(InboxRow).order_by(InboxRow.id))).scalars())
    finally:
        await db.close()


async def run_rows(database_url: str) -> list[RunRow]:
    """Every run's row, oldest first."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(RunRow).order_by(RunRow.id))).scalars())
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


async def make_overdue(database_url: str) -> None:
    """Every pending approval's expiry, a minute ago, as if its time had passed."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            await session.execute(update(ApprovalRow).where(ApprovalRow.status == "pending")
                                  .values(expires_at=utcnow() - timedelta(minutes=1)))
    finally:
        await db.close()


async def until_done(database_url: str, count: int) -> None:
    """Wait (through a second engine, not counted) until `count` inbox items are done."""
    observer = Database(database_url)
    try:
        async with asyncio.timeout(10):
            while True:
                async with observer.session() as session:
                    done = (await session.execute(select(InboxRow.id).where(InboxRow.status == "done"))).all()
                if len(done) >= count:
                    return
                await asyncio.sleep(0.02)
    finally:
        await observer.close()


async def until_replies_recorded(database_url: str, count: int) -> None:
    """Wait (through a second engine) until `count` inbox items have their reply's message id stored."""
    observer = Database(database_url)
    try:
        async with asyncio.timeout(10):
            while True:
                async with observer.session() as session:
                    recorded = (await session.execute(select(InboxRow.id)
                                                      .where(InboxRow.reply_message_id.is_not(None)))).all()
                if len(recorded) >= count:
                    return
                await asyncio.sleep(0.02)
    finally:
        await observer.close()


async def until_resumed(database_url: str, count: int) -> None:
    """Wait (through a second engine) until `count` parked runs are resumed: their resume's end is committed."""
    observer = Database(database_url)
    try:
        async with asyncio.timeout(10):
            while True:
                async with observer.session() as session:
                    resumed = (await session.execute(select(ParkedRunRow.id)
                                                     .where(ParkedRunRow.status == "resumed"))).all()
                if len(resumed) >= count:
                    return
                await asyncio.sleep(0.02)
    finally:
        await observer.close()


async def approval_rows(database_url: str) -> list[ApprovalRow]:
    """Every approval asked for, oldest first, with its decision, scope and reason."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(ApprovalRow).order_by(ApprovalRow.created_at))).scalars())
    finally:
        await db.close()


async def lapse_standing_approvals(database_url: str) -> None:
    """Every approval for a conversation ran out a minute ago, as if its time had passed."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            await session.execute(update(ApprovalRow).where(ApprovalRow.scope == "conversation")
                                  .values(grant_until=utcnow() - timedelta(minutes=1)))
    finally:
        await db.close()
