"""The outbox's sweep, on every replica: a file whose delivery died mid-upload is posted once its claim runs out,
and settled rows are pruned.

A claim is renewed while its upload lasts (`outbox_posting.py`), so a claim that ran out belongs to a delivery that
is gone; the sweep takes the file over by the same compare-and-swap a turn's delivery uses and posts it into the
conversation of the run that stored it, through this replica's adapter for that bot. A posted row has held no bytes
since it was posted; it is kept for `POSTED_RETENTION` only, so that an attempt of the same turn retried after a crash
finds the file posted instead of posting it again. A failed row is kept as long as the inbox keeps its items.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta

from sqlalchemy import Connection, and_, delete, func, or_, select

from adapters.base import ChatAddress
from gateway.pipeline.outbox_posting import FileChat, FilePosting
from storage.db import Database
from storage.tables import CONVERSATIONS, RUNS, utcnow
from storage.tables import OUTBOX_FILES as OUTBOX

log = logging.getLogger(__name__)

POSTED_RETENTION = timedelta(days=1)
"""Far beyond any retry of a turn (a crashed worker's turn is retried within its lease, seconds)."""
FAILED_RETENTION = timedelta(days=30)
"""As long as the inbox keeps a finished message: an operator may look into why a file was refused."""
BATCH = 50
"""Expired claims taken over per sweep; the rest at the next one, which comes at once while any is due."""
_EXPIRED = (select(OUTBOX.c.id, CONVERSATIONS.c.bot_name, CONVERSATIONS.c.platform, CONVERSATIONS.c.channel_id,
                   CONVERSATIONS.c.thread_id, CONVERSATIONS.c.is_direct)
            .join(RUNS, RUNS.c.id == OUTBOX.c.run_id).join(CONVERSATIONS, CONVERSATIONS.c.id == RUNS.c.conversation_id)
            .order_by(OUTBOX.c.id).limit(BATCH))


class OutboxSweep:
    """`chats`: this replica's adapters that post files, by bot name."""

    def __init__(self, db: Database, chats: Mapping[str, FileChat], *, claim: timedelta) -> None:
        self._db = db
        self._chats = dict(chats)
        self._posting = FilePosting(db, claim=claim)

    async def next_expiry(self) -> datetime | None:
        """When the earliest claim runs out; None when no file is being posted."""
        def work(connection: Connection) -> datetime | None:
            return connection.execute(select(func.min(OUTBOX.c.claimed_until))
                                      .where(OUTBOX.c.status == "posting")).scalar()
        return await self._db.run(work, single=True)

    async def deliver_expired(self) -> int:
        """Post every file whose claim ran out (a delivery that died); returns how many this sweep posted."""
        now = utcnow()

        def work(connection: Connection) -> list[tuple[int, str, ChatAddress]]:
            rows = connection.execute(_EXPIRED.where(OUTBOX.c.status == "posting", OUTBOX.c.claimed_until < now))
            return [(row.id, row.bot_name, ChatAddress(bot_id=row.bot_name, platform=row.platform,
                                                       channel_id=row.channel_id, thread_id=row.thread_id,
                                                       is_direct=row.is_direct)) for row in rows]
        posted = 0
        for file_id, bot_name, address in await self._db.run(work, single=True):
            chat = self._chats.get(bot_name)
            if chat is None:  # a bot this replica does not run (its config changed): a replica that runs it posts it
                continue
            claimed = await self._posting.claim(file_id)
            if claimed is not None:
                log.info("taking over %s, whose delivery stopped mid-upload", claimed[0].name)
                posted += await self._posting.post(chat, address, *claimed)
        return posted

    async def prune(self) -> int:
        """Forget posted rows after `POSTED_RETENTION`, and any row after `FAILED_RETENTION`; a file whose run is
        gone (its conversation forgotten) has nowhere to go, and goes after `POSTED_RETENTION` too."""
        now = utcnow()

        def work(connection: Connection) -> int:
            removed = connection.execute(delete(OUTBOX).where(or_(
                and_(OUTBOX.c.status == "posted", OUTBOX.c.posted_at < now - POSTED_RETENTION),
                and_(OUTBOX.c.run_id.is_(None), OUTBOX.c.created_at < now - POSTED_RETENTION),
                OUTBOX.c.created_at < now - FAILED_RETENTION)))
            return int(removed.rowcount or 0)
        return await self._db.run(work)
