"""What `memory_files` keeps about people: their notes in this database, which `forget` deletes and linking merges.

Declared on the capability (`CapabilityDef.personal_store`) so the gateway's core reaches notes without naming this
capability, whether or not an agent binds it today.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from capabilities.memory_files.store import MemoryNotes, move_notes
from capabilities.run import Deleted, Deployment, Held, MemoryOwner


@dataclass(frozen=True, slots=True)
class PersonalNotes:
    """`capabilities.run.PersonalStore` over the `memory_notes` table."""

    notes: MemoryNotes

    async def held(self, owners: Sequence[MemoryOwner]) -> Held:
        count = await self.notes.count_owned(owners)
        return Held(count=count, counted=_notes(count))

    async def delete(self, owners: Sequence[MemoryOwner]) -> Deleted:
        return Deleted(counted=_notes(await self.notes.delete_owned(owners)))

    async def clear(self, agent_name: str) -> Deleted:
        return Deleted(counted=_notes(await self.notes.clear_agent(agent_name)))

    def move(self, connection: Connection, source: MemoryOwner, target: MemoryOwner) -> None:
        move_notes(connection, source, target)


def personal_store(deployment: Deployment) -> PersonalNotes:
    return PersonalNotes(MemoryNotes(deployment.db))


def _notes(count: int) -> str:
    return f"{count} note(s)"
