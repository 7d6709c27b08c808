"""Memory notes: one agent's files in one owner's store. Every query names the agent and the owner."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, delete, false, func, insert, select, tuple_, update

from capabilities.run import MemoryOwner, NoteInfo
from storage.db import Database
from storage.tables import MEMORY_NOTES, utcnow

MERGE_SEPARATOR = "\n\n"
"""Between two notes of the same path when two stores become one (the index lists both halves)."""

_NOTES = MEMORY_NOTES.c


class MemoryNotes:
    """`capabilities.run.NoteStore` on the `memory_notes` table, and what forgetting and linking need."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def list(self, agent_name: str, owner: MemoryOwner) -> list[NoteInfo]:
        def work(connection: Connection) -> list[NoteInfo]:
            rows = connection.execute(select(_NOTES.path, func.length(_NOTES.content), _NOTES.updated_at)
                                      .where(*_of(agent_name, owner)).order_by(_NOTES.path)).all()
            return [NoteInfo(path=path, size=int(size), updated_at=updated) for path, size, updated in rows]
        return await self._db.run(work, single=True)

    async def read(self, agent_name: str, owner: MemoryOwner, path: str) -> str | None:
        def work(connection: Connection) -> str | None:
            return connection.execute(select(_NOTES.content)
                                      .where(*_of(agent_name, owner), _NOTES.path == path)).scalar_one_or_none()
        return await self._db.run(work, single=True)

    async def write(self, agent_name: str, owner: MemoryOwner, path: str, content: str) -> bool:
        """Create or replace a note; True when it was created."""
        def work(connection: Connection) -> bool:
            row = _locked(connection, agent_name, owner, path)
            if row is not None:
                _rewrite(connection, row.id, content)
                return False
            connection.execute(insert(MEMORY_NOTES).values(agent_name=agent_name, owner_kind=owner.kind,
                                                           owner_key=owner.key, path=path, content=content))
            return True
        return await self._db.run(work)

    async def change(self, agent_name: str, owner: MemoryOwner, path: str,
                     edit: Callable[[str], str]) -> str | None:
        """Apply `edit` to a note's content under a row lock; None when there is no such note.

        `edit` may raise to leave the note unchanged; the exception reaches the caller.
        """
        def work(connection: Connection) -> str | None:
            row = _locked(connection, agent_name, owner, path)
            if row is None:
                return None
            content = edit(row.content)
            _rewrite(connection, row.id, content)
            return content
        return await self._db.run(work)

    async def delete(self, agent_name: str, owner: MemoryOwner, path: str) -> bool:
        def work(connection: Connection) -> bool:
            result = connection.execute(delete(MEMORY_NOTES).where(*_of(agent_name, owner), _NOTES.path == path))
            return bool(result.rowcount)
        return await self._db.run(work, single=True)

    async def count_owned(self, owners: Iterable[MemoryOwner]) -> int:
        """Notes of these owners across every agent."""
        def work(connection: Connection) -> int:
            return int(connection.execute(select(func.count()).select_from(MEMORY_NOTES)
                                          .where(_owned_by(owners))).scalar_one())
        return await self._db.run(work, single=True)

    async def delete_owned(self, owners: Iterable[MemoryOwner]) -> int:
        """Every note of these owners, for every agent: what forgetting a person means."""
        def work(connection: Connection) -> int:
            return connection.execute(delete(MEMORY_NOTES).where(_owned_by(owners))).rowcount
        return await self._db.run(work, single=True)

    async def clear_agent(self, agent_name: str) -> int:
        """Every note one agent keeps, whoever it belongs to."""
        def work(connection: Connection) -> int:
            return connection.execute(delete(MEMORY_NOTES).where(_NOTES.agent_name == agent_name)).rowcount
        return await self._db.run(work, single=True)


def move_notes(connection: Connection, source: MemoryOwner, target: MemoryOwner) -> None:
    """Give `source`'s notes to `target` (two stores become one when identities are linked), in the caller's
    transaction.

    A path both stores hold keeps both texts, the target's first, so nothing either side wrote is lost.
    """
    if source == target:
        return
    moving = connection.execute(select(MEMORY_NOTES).where(
        _NOTES.owner_kind == source.kind, _NOTES.owner_key == source.key)).all()
    for row in moving:
        existing = _locked(connection, row.agent_name, target, row.path)
        if existing is None:
            connection.execute(update(MEMORY_NOTES).where(_NOTES.id == row.id)
                               .values(owner_kind=target.kind, owner_key=target.key))
            continue
        _rewrite(connection, existing.id, existing.content.rstrip() + MERGE_SEPARATOR + row.content)
        connection.execute(delete(MEMORY_NOTES).where(_NOTES.id == row.id))


def _of(agent_name: str, owner: MemoryOwner) -> tuple[ColumnElement[bool], ...]:
    return _NOTES.agent_name == agent_name, _NOTES.owner_kind == owner.kind, _NOTES.owner_key == owner.key


def _owned_by(owners: Iterable[MemoryOwner]) -> ColumnElement[bool]:
    pairs = [(owner.kind, owner.key) for owner in owners]
    return tuple_(_NOTES.owner_kind, _NOTES.owner_key).in_(pairs) if pairs else false()


def _locked(connection: Connection, agent_name: str, owner: MemoryOwner, path: str) -> Row[Any] | None:
    return connection.execute(select(MEMORY_NOTES).where(*_of(agent_name, owner), _NOTES.path == path)
                              .with_for_update()).one_or_none()


def _rewrite(connection: Connection, note_id: int, content: str) -> None:
    connection.execute(update(MEMORY_NOTES).where(_NOTES.id == note_id).values(content=content, updated_at=utcnow()))
