"""The durable per-run outbox: files a run produces are stored with its turn, then posted into the thread once.

A capability's `post_file` only stores (the `Outbox` protocol of `capabilities/context.py`); the runtime calls
`deliver` when the run answers, parks for a person, or fails. Every file of the turn not yet posted is claimed
by compare-and-swap and posted, so:

- a run parked for an approval has posted its files before the cards; the resume, on whichever replica, finds
  them posted and posts only what it stored itself;
- a worker that died between store and post left the file pending: the retried turn shares the turn key
  (`inbox:<id>`), stores the same file again as the same row, and posts it once;
- a worker that died while posting left a claim that runs out after `CLAIM`; the next delivery posts it again
  (Mattermost dedupes that second post by the file's key; Slack and Telegram would show it twice — the window
  is one upload).
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
from datetime import timedelta
from typing import Protocol

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from adapters.base import ChatAddress, FileUnreadable, OutgoingFile, PlatformConfigError, too_large
from adapters.protocols import ChatOutput, PostsFiles
from capabilities.context import FileRefused
from storage.db import Database, insert_for
from storage.models import OutboxFileRow, utcnow

log = logging.getLogger(__name__)

CLAIM = timedelta(minutes=2)
"""How long one delivery holds a file it is posting before another may take it over."""
NAME_LIMIT = 255


class FileChat(PostsFiles, ChatOutput, Protocol):
    """Where a run's files go: posted as files, and a failure said in words."""


def turn_key(run_id: int, inbox_id: int | None) -> str:
    """The key a run's files are kept under: every attempt of one message's turn shares its inbox id."""
    return f"inbox:{inbox_id}" if inbox_id is not None else f"run:{run_id}"


class RunOutbox:
    """The outbox of one run in one conversation (what `RunFacts.outbox` holds)."""

    def __init__(self, db: Database, chat: FileChat | None, address: ChatAddress, *, run_id: int | None,
                 key: str) -> None:
        """`chat` None: this bot's platform takes no files, and `post_file` says so. `run_id` None: no run row."""
        self._db = db
        self._chat = chat
        self._address = address
        self._run_id = run_id
        self.key = key

    async def post_file(self, *, name: str, data: bytes, mime_type: str | None, caption: str | None = None) -> None:
        if self._chat is None:
            raise FileRefused(f"this chat ({self._address.platform}) takes no files from the bot; {name} was not sent")
        cap = self._chat.limits.max_file_bytes
        if len(data) > cap:
            raise FileRefused(f"{too_large(name, len(data), cap)} on {self._address.platform.capitalize()}; "
                              "it was not sent")
        name = name.strip()[:NAME_LIMIT] or "file"
        kind = mime_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
        digest = hashlib.sha256(name.encode() + b"\x00" + data).hexdigest()
        insert = insert_for(self._db.dialect)

        async def work(session: AsyncSession) -> None:
            await session.execute(insert(OutboxFileRow).values(
                turn_key=self.key, run_id=self._run_id, digest=digest, name=name, mime_type=kind[:128],
                caption=caption, data=data, size=len(data), status="pending", created_at=utcnow(),
            ).on_conflict_do_nothing(index_elements=["turn_key", "digest"]))
        await self._db.transaction(work)

    async def deliver(self) -> int:
        """Post every file of this turn that is not posted yet, oldest first; returns how many this call posted.

        Never raises for a file: a refused one is marked failed and the chat is told why."""
        if self._chat is None:
            return 0
        posted = 0
        for file_id in await self._waiting():
            row = await self._claim(file_id)
            if row is not None and await self._post(self._chat, row):
                posted += 1
        return posted

    async def _waiting(self) -> list[int]:
        async def work(session: AsyncSession) -> list[int]:
            found = await session.execute(select(OutboxFileRow.id).where(
                OutboxFileRow.turn_key == self.key, OutboxFileRow.status.in_(("pending", "posting")))
                .order_by(OutboxFileRow.id))
            return list(found.scalars())
        return await self._db.transaction(work)

    async def _claim(self, file_id: int) -> OutboxFileRow | None:
        """Take the file for posting, unless another delivery holds it or posted it (compare-and-swap)."""
        now = utcnow()

        async def work(session: AsyncSession) -> OutboxFileRow | None:
            taken = await session.execute(update(OutboxFileRow).where(
                OutboxFileRow.id == file_id,
                or_(OutboxFileRow.status == "pending",
                    (OutboxFileRow.status == "posting") & (OutboxFileRow.claimed_until < now)),
            ).values(status="posting", claimed_until=now + CLAIM))
            if taken.rowcount != 1:  # type: ignore[attr-defined]
                return None
            return await session.get(OutboxFileRow, file_id)
        return await self._db.transaction(work)

    async def _post(self, chat: FileChat, row: OutboxFileRow) -> bool:
        file = OutgoingFile(name=row.name, data=row.data, mime_type=row.mime_type, caption=row.caption,
                            key=f"{self.key}:{row.digest[:16]}")
        try:
            posted_id = await chat.post_file(self._address, file)
        except Exception as exc:
            await self._failed(chat, row, exc)
            return False
        await self._settle(row.id, status="posted", posted_id=posted_id)
        log.info("posted %s (%d bytes) into %s", row.name, row.size, self._address.conversation_key)
        return True

    async def _failed(self, chat: FileChat, row: OutboxFileRow, exc: Exception) -> None:
        """The file is given up on and the conversation told, in words for people; the log has the rest."""
        log.warning("could not post %s into %s: %s: %s", row.name, self._address.conversation_key,
                    type(exc).__name__, exc)
        await self._settle(row.id, status="failed", error=f"{type(exc).__name__}: {exc}")
        if isinstance(exc, FileUnreadable):
            why = str(exc)
        elif isinstance(exc, PlatformConfigError):
            why = "the platform refused the bot's upload (a setting of this bot; the operator can see which)"
        else:
            why = "the platform did not take the upload"
        try:
            await chat.send(self._address, f"I made {row.name} but could not post it here: {why}.")
        except Exception as notice_exc:  # the file's row says failed; the log has both
            log.warning("could not say that %s failed: %s", row.name, notice_exc)

    async def _settle(self, file_id: int, *, status: str, posted_id: str | None = None,
                      error: str | None = None) -> None:
        async def work(session: AsyncSession) -> None:
            await session.execute(update(OutboxFileRow).where(OutboxFileRow.id == file_id).values(
                status=status, posted_id=posted_id, error=error, claimed_until=None, data=b"",
                posted_at=utcnow() if status == "posted" else None))
        await self._db.transaction(work)
