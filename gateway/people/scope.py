"""Whose memory a turn may touch, decided from who will hear the answer — never by the model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from adapters.base import ChatAddress

OwnerKind = Literal["person", "identity", "room"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryOwner:
    """The one store a run reads and writes: a person's, an unlinked identity's, or a room's."""

    kind: OwnerKind
    key: str
    """The person or identity id, or the room's `ChatAddress.room_key`."""

    @property
    def personal(self) -> bool:
        """Only the person it belongs to hears answers drawn from it."""
        return self.kind != "room"


def memory_owner(address: ChatAddress, *, identity_id: int, person_id: int | None,
                 allow_personal: bool) -> MemoryOwner | None:
    """A DM reaches the speaker's notes (their linked person's when linked); a group reaches the room's.

    None means there is no store: personal memory is switched off for this bot and this is a DM.
    """
    if not address.is_direct:
        return MemoryOwner(kind="room", key=address.room_key)
    if not allow_personal:
        return None
    if person_id is not None:
        return MemoryOwner(kind="person", key=str(person_id))
    return MemoryOwner(kind="identity", key=str(identity_id))
