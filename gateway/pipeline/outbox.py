"""The durable per-run outbox: files a run produces are stored with its turn, then posted into the thread once.

A capability's `post_file` only stores (the `Outbox` protocol of `capabilities/run/`): it returns once the
file is committed, so a tool that says a file is on its way says it of a stored file. The runtime calls `deliver`
when the run answers, parks for a person, or fails. Every file of the turn not yet posted is claimed by
compare-and-swap and posted (`outbox_posting.py`), so:

- a run parked for an approval has posted its files before the cards; the resume, on whichever replica, finds
  them posted and posts only what it stored itself;
- a worker that died between store and post left the file pending: the retried turn shares the turn key
  (`inbox:<id>`), stores the same file again as the same row, and posts it once;
- a worker that died while posting left a claim nobody renews: once it runs out, the retried turn's delivery or
  any replica's sweep (`outbox_sweep.py`) posts the file (at most one duplicate where the upload had gone
  through: see `outbox_posting.py`).
"""

from __future__ import annotations

import hashlib
import mimetypes
from datetime import timedelta

from sqlalchemy import Connection, select

from adapters.base import ChatAddress, too_large
from capabilities.run import FileRefused
from gateway.pipeline.outbox_posting import FileChat, FilePosting
from storage.db import Database, insert_for
from storage.tables import OUTBOX_FILES, utcnow

CLAIM = timedelta(seconds=10)
"""How long a delivery holds a file it is posting before another may take it over; renewed every quarter of it
while the upload lasts, so only a dead delivery's claim runs out."""
NAME_LIMIT = 255


def turn_key(run_id: int, inbox_id: int | None) -> str:
    """The key a run's files are kept under: every attempt of one message's turn shares its inbox id."""
    return f"inbox:{inbox_id}" if inbox_id is not None else f"run:{run_id}"


class RunOutbox:
    """The outbox of one run in one conversation (what `RunFacts.outbox` holds)."""

    def __init__(self, db: Database, chat: FileChat | None, address: ChatAddress, *, run_id: int | None,
                 key: str, earlier: bool = True, claim: timedelta = CLAIM) -> None:
        """`chat` None: this bot's platform takes no files, and `post_file` says so. `run_id` None: no run row.
        `earlier` False: no earlier attempt or part of this turn can have stored a file, so a delivery after
        which this outbox stored nothing has nothing to look up (a plain turn costs no outbox query)."""
        self._db = db
        self._chat = chat
        self._address = address
        self._run_id = run_id
        self.key = key
        self._pending = earlier
        self._posting = FilePosting(db, claim=claim)

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

        def work(connection: Connection) -> str | None:
            stored = connection.execute(insert(OUTBOX_FILES).values(
                turn_key=self.key, run_id=self._run_id, digest=digest, name=name, mime_type=kind[:128],
                caption=caption, data=data, size=len(data), status="pending", created_at=utcnow(),
            ).on_conflict_do_nothing(index_elements=["turn_key", "digest"]))
            if stored.rowcount == 1:
                return None
            return connection.execute(select(OUTBOX_FILES.c.status).where(  # an earlier attempt stored it
                OUTBOX_FILES.c.turn_key == self.key, OUTBOX_FILES.c.digest == digest)).scalar()
        if await self._db.run(work) == "failed":
            raise FileRefused(f"an earlier attempt at this answer could not post {name} here (the chat was told "
                              "why); it was not sent again")
        self._pending = True

    async def deliver(self) -> int:
        """Post every file of this turn that is not posted yet, oldest first; returns how many this call posted.

        Never raises for a file: a refused one is marked failed and the chat is told why."""
        if self._chat is None or not self._pending:
            return 0
        posted = 0
        for file_id in await self._waiting():
            claimed = await self._posting.claim(file_id)
            if claimed is not None and await self._posting.post(self._chat, self._address, *claimed):
                posted += 1
        return posted

    async def _waiting(self) -> list[int]:
        def work(connection: Connection) -> list[int]:
            found = connection.execute(select(OUTBOX_FILES.c.id).where(
                OUTBOX_FILES.c.turn_key == self.key, OUTBOX_FILES.c.status.in_(("pending", "posting")))
                .order_by(OUTBOX_FILES.c.id))
            return list(found.scalars())
        return await self._db.run(work, single=True)
