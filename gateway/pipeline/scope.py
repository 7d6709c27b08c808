"""Whose memory a turn may touch, decided from who will hear the answer — never by the model."""

from __future__ import annotations

from adapters.base import ChatAddress
from capabilities.run import MemoryOwner


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
