"""Posting one stored outbox file: claimed by compare-and-swap, held while the upload lasts, settled once.

A claim runs for `claim` and is renewed every quarter of it while the platform takes the upload, so only a delivery
that died (a killed process, a lost host) lets its claim run out; then any replica takes the file over (the
turn's own delivery, or `outbox_sweep.py`) and posts it. The platform may already hold the file when the claim
ran out: a kill after the upload went through and before `posted` was written. Mattermost answers a repeated
post with the first one (its `pending_post_id` is the file's key); Slack and Telegram take every upload as a
new one, so there that crash costs one duplicate, never the file.

A file the platform refuses is given up: the chat is told in words for people, and the same words join the
conversation's history, so the next turn's model knows the file never arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy import Connection, or_, select, update

from adapters.base import ChatAddress, FileUnreadable, OutgoingFile, PlatformConfigError
from adapters.protocols import ChatOutput, PostsFiles
from gateway.pipeline.conversations import record_answer
from storage.db import Database
from storage.tables import OUTBOX_FILES as OUTBOX
from storage.tables import RUNS, utcnow

log = logging.getLogger(__name__)


class FileChat(PostsFiles, ChatOutput, Protocol):
    """Where a run's files go: posted as files, and a failure said in words."""


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A claimed file, as its row holds it."""

    id: int
    turn_key: str
    run_id: int | None
    digest: str
    name: str
    mime_type: str
    caption: str | None
    data: bytes
    size: int


_STORED = tuple(OUTBOX.c[field.name] for field in fields(StoredFile))


class FilePosting:
    """Claims and posts stored files; one per outbox (a run's, or the sweep's)."""

    def __init__(self, db: Database, *, claim: timedelta) -> None:
        self._db = db
        self._claim = claim

    async def claim(self, file_id: int) -> tuple[StoredFile, datetime] | None:
        """Take the file for posting, unless a live delivery holds it or it is settled (compare-and-swap); the
        row and the moment the claim runs out, which is what a renewal compares against."""
        now = utcnow()
        until = now + self._claim

        def work(connection: Connection) -> StoredFile | None:
            taken = connection.execute(update(OUTBOX).where(
                OUTBOX.c.id == file_id,
                or_(OUTBOX.c.status == "pending", (OUTBOX.c.status == "posting") & (OUTBOX.c.claimed_until < now)),
            ).values(status="posting", claimed_until=until).returning(*_STORED))
            row = taken.first()
            return None if row is None else StoredFile(*row)
        stored = await self._db.run(work)
        return None if stored is None else (stored, until)

    async def post(self, chat: FileChat, address: ChatAddress, row: StoredFile, until: datetime) -> bool:
        """Post a claimed file into `address`; True once it is posted. Never raises for the file: one the platform
        refuses is marked failed and said."""
        file = OutgoingFile(name=row.name, data=row.data, mime_type=row.mime_type, caption=row.caption,
                            key=f"{row.turn_key}:{row.digest[:16]}")
        try:
            async with self._holding(row.id, until):
                posted_id = await chat.post_file(address, file)
        except Exception as exc:
            await self._failed(chat, address, row, exc)
            return False
        await self._settle(row.id, status="posted", posted_id=posted_id)
        log.info("posted %s (%d bytes) into %s", row.name, row.size, address.conversation_key)
        return True

    @contextlib.asynccontextmanager
    async def _holding(self, file_id: int, until: datetime) -> AsyncGenerator[None, None]:
        """Renew the claim every quarter of its length while the body runs."""
        renewal = asyncio.create_task(self._renew(file_id, until), name="outbox: claim renewal")
        try:
            yield
        finally:
            renewal.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewal

    async def _renew(self, file_id: int, until: datetime) -> None:
        while True:
            await asyncio.sleep(self._claim.total_seconds() / 4)
            try:
                later = utcnow() + self._claim
                if not await self._extend(file_id, until, later):
                    log.warning("lost the claim on outbox file %d while posting it", file_id)
                    return
                until = later
            except Exception as exc:  # the next quarter tries again; the claim holds until it runs out
                log.warning("could not renew the claim on outbox file %d: %s: %s", file_id, type(exc).__name__, exc)

    async def _extend(self, file_id: int, until: datetime, later: datetime) -> bool:
        """Move the claim on to `later` if it is still the one this delivery took (its `claimed_until` unchanged, or
        already `later`: the statement run again after a lost connection)."""
        def work(connection: Connection) -> bool:
            moved = connection.execute(update(OUTBOX).where(
                OUTBOX.c.id == file_id, OUTBOX.c.status == "posting", OUTBOX.c.claimed_until.in_((until, later)),
            ).values(claimed_until=later))
            return moved.rowcount == 1
        return await self._db.run(work, single=True)

    async def _failed(self, chat: FileChat, address: ChatAddress, row: StoredFile, exc: Exception) -> None:
        """The file is given up on; the conversation is told, in words for people, and its history keeps them."""
        log.warning("could not post %s into %s: %s: %s", row.name, address.conversation_key,
                    type(exc).__name__, exc)
        await self._settle(row.id, status="failed", error=f"{type(exc).__name__}: {exc}")
        notice = f"I made {row.name} but could not post it here: {_why(exc)}."
        try:
            said = await chat.send(address, notice)
        except Exception as notice_exc:  # the file's row says failed; the log has both
            log.warning("could not say that %s failed: %s", row.name, notice_exc)
            said = None
        run_id, message_id = row.run_id, said.message_id if said is not None else None
        if run_id is not None:
            await self._db.run(lambda connection: _remember(connection, run_id, notice, message_id))

    async def _settle(self, file_id: int, *, status: str, posted_id: str | None = None,
                      error: str | None = None) -> None:
        def work(connection: Connection) -> None:
            connection.execute(update(OUTBOX).where(OUTBOX.c.id == file_id).values(
                status=status, posted_id=posted_id, error=error, claimed_until=None, data=b"",
                posted_at=utcnow() if status == "posted" else None))
        await self._db.run(work, single=True)


def _why(exc: Exception) -> str:
    if isinstance(exc, FileUnreadable):
        return str(exc)
    if isinstance(exc, PlatformConfigError):
        return "the platform refused the bot's upload (a setting of this bot; the operator can see which)"
    return "the platform did not take the upload"


def _remember(connection: Connection, run_id: int, notice: str, message_id: str | None) -> None:
    """The notice as the bot's turn in the run's conversation: a later turn reads that the file did not arrive."""
    run = connection.execute(select(RUNS.c.conversation_id, RUNS.c.agent_name).where(RUNS.c.id == run_id)).first()
    if run is not None:
        record_answer(connection, run.conversation_id, run_id=run_id, text=notice, speaker_name=run.agent_name,
                      platform_message_id=message_id)
