"""What `memory_files` binds when the gateway starts: the store of every owner's notes."""

from __future__ import annotations

from dataclasses import dataclass

from capabilities.memory_files.store import MemoryNotes
from capabilities.run import Deployment, NoteStore


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryFilesServices:
    notes: NoteStore


def bind(deployment: Deployment) -> MemoryFilesServices:
    return MemoryFilesServices(notes=MemoryNotes(deployment.db))
