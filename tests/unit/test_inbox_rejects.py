"""Rejected payloads are kept small (hash, size, first bytes) and for less time than answered items."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from sqlalchemy import select, update

from gateway.pipeline.inbox import Inbox
from storage.db import Database
from storage.models import InboxRow, utcnow

BIG = b"\x00\xff" + b"x" * (2 * 1024 * 1024)


async def test_a_big_unreadable_body_is_kept_as_its_hash_size_and_first_bytes(db: Database) -> None:
    await Inbox(db).reject(bot_name="bot", body=BIG, error="not JSON \x00")
    async with db.session() as session:
        [row] = (await session.execute(select(InboxRow))).scalars().all()
    assert row.status == "rejected" and row.logical_id == f"rejected:bot:{hashlib.sha256(BIG).hexdigest()}"
    assert row.payload["size"] == len(BIG) and row.payload["truncated"] is True
    assert len(row.payload["excerpt"]) <= 4096 and "\x00" not in row.payload["excerpt"] + (row.error or "")


async def test_rejected_items_are_pruned_sooner_than_answered_ones(db: Database) -> None:
    inbox = Inbox(db)
    await inbox.reject(bot_name="bot", body=b"{", error="not JSON")
    await inbox.accept(logical_id="done-1", bot_name="bot", conversation_key="c", payload={})
    [item] = await inbox.claim("w", lease=timedelta(seconds=30), limit=1)
    await inbox.complete("w", item.id)
    async with db.session() as session:
        await session.execute(update(InboxRow).values(finished_at=utcnow() - timedelta(days=4)))
    assert await inbox.prune(older_than=timedelta(days=30)) == 1
    async with db.session() as session:
        assert [r.status for r in (await session.execute(select(InboxRow))).scalars()] == ["done"]
