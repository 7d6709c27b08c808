"""Memory notes: one agent's files in one owner's store. Every query names the agent and the owner."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlalchemy import ColumnElement, delete, false, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from capabilities.run import MemoryOwner, NoteInfo
from storage.db import Database, rows_changed
from storage.models import MemoryNoteRow
from storage.tables import utcnow

MERGE_SEPARATOR = "\n\n"
"""Between two notes of the same path when two stores become one (the index lists both halves)."""


class MemoryNotes:
    """`capabilities.run.NoteStore` on the `memory_notes` table, and what forgetting and linking need."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def list(self, agent_name: str, owner: MemoryOwner) -> list[NoteInfo]:
        async def work(session: AsyncSession) -> list[NoteInfo]:
            rows = (await session.execute(
                select(MemoryNoteRow.path, func.length(MemoryNoteRow.content), MemoryNoteRow.updated_at)
                .where(*_of(agent_name, owner)).order_by(MemoryNoteRow.path))).all()
            return [NoteInfo(path=path, size=int(size), updated_at=updated) for path, size, updated in rows]
        return await self._db.transaction(work)

    async def read(self, agent_name: str, owner: MemoryOwner, path: str) -> str | None:
        async def work(session: AsyncSession) -> str | None:
            found = await session.execute(select(MemoryNoteRow.content)
                                          .where(*_of(agent_name, owner), MemoryNoteRow.path == path))
            return found.scalar_one_or_none()
        return await self._db.transaction(work)

    async def write(self, agent_name: str, owner: MemoryOwner, path: str, content: str) -> bool:
        """Create or replace a note; True when it was created."""
        async def work(session: AsyncSession) -> bool:
            row = await _locked(session, agent_name, owner, path)
            if row is not None:
                row.content, row.updated_at = content, utcnow()
                return False
            session.add(MemoryNoteRow(agent_name=agent_name, owner_kind=owner.kind, owner_key=owner.key,
                                      path=path, content=content))
            return True
        return await self._db.transaction(work)

    async def change(self, agent_name: str, owner: MemoryOwner, path: str,
                     edit: Callable[[str], str]) -> str | None:
        """Apply `edit` to a note's content under a row lock; None when there is no such note.

        `edit` may raise to leave the note unchanged; the exception reaches the caller.
        """
        async def work(session: AsyncSession) -> str | None:
            row = await _locked(session, agent_name, owner, path)
            if row is None:
                return None
            row.content, row.updated_at = edit(row.content), utcnow()
            return row.content
        return await self._db.transaction(work)

    async def delete(self, agent_name: str, owner: MemoryOwner, path: str) -> bool:
        async def work(session: AsyncSession) -> bool:
            result = await session.execute(delete(MemoryNoteRow)
                                           .where(*_of(agent_name, owner), MemoryNoteRow.path == path))
            return bool(rows_changed(result))
        return await self._db.transaction(work)

    async def count_owned(self, owners: Iterable[MemoryOwner]) -> int:
        """Notes of these owners across every agent."""
        async def work(session: AsyncSession) -> int:
            return int((await session.execute(select(func.count()).select_from(MemoryNoteRow)
                                              .where(_owned_by(owners)))).scalar_one())
        return await self._db.transaction(work)

    async def delete_owned(self, owners: Iterable[MemoryOwner]) -> int:
        """Every note of these owners, for every agent: what forgetting a person means."""
        async def work(session: AsyncSession) -> int:
            return rows_changed(await session.execute(delete(MemoryNoteRow).where(_owned_by(owners))))
        return await self._db.transaction(work)

    async def clear_agent(self, agent_name: str) -> int:
        """Every note one agent keeps, whoever it belongs to."""
        async def work(session: AsyncSession) -> int:
            result = await session.execute(delete(MemoryNoteRow).where(MemoryNoteRow.agent_name == agent_name))
            return rows_changed(result)
        return await self._db.transaction(work)


async def move_notes(session: AsyncSession, source: MemoryOwner, target: MemoryOwner) -> None:
    """Give `source`'s notes to `target` (two stores become one when identities are linked).

    A path both stores hold keeps both texts, the target's first, so nothing either side wrote is lost.
    """
    if source == target:
        return
    moving = (await session.execute(select(MemoryNoteRow).where(
        MemoryNoteRow.owner_kind == source.kind, MemoryNoteRow.owner_key == source.key))).scalars().all()
    for row in moving:
        existing = await _locked(session, row.agent_name, target, row.path)
        if existing is None:
            row.owner_kind, row.owner_key = target.kind, target.key
            continue
        existing.content = existing.content.rstrip() + MERGE_SEPARATOR + row.content
        existing.updated_at = utcnow()
        await session.delete(row)
    await session.flush()


def _of(agent_name: str, owner: MemoryOwner) -> tuple[ColumnElement[bool], ...]:
    return (MemoryNoteRow.agent_name == agent_name, MemoryNoteRow.owner_kind == owner.kind,
            MemoryNoteRow.owner_key == owner.key)


def _owned_by(owners: Iterable[MemoryOwner]) -> ColumnElement[bool]:
    pairs = [(owner.kind, owner.key) for owner in owners]
    return tuple_(MemoryNoteRow.owner_kind, MemoryNoteRow.owner_key).in_(pairs) if pairs else false()


async def _locked(session: AsyncSession, agent_name: str, owner: MemoryOwner, path: str) -> MemoryNoteRow | None:
    found = await session.execute(select(MemoryNoteRow).where(*_of(agent_name, owner), MemoryNoteRow.path == path)
                                  .with_for_update())
    return found.scalar_one_or_none()
