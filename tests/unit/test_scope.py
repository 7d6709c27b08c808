"""The memory owner follows who will hear the answer: the speaker's person in a DM, the room in a group."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from adapters.base import ChatAddress
from capabilities.run import MemoryOwner
from gateway.pipeline.steps.answer import memory_owner


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    direct: bool
    person_id: int | None
    allow_personal: bool
    owner: MemoryOwner | None


ROOM = MemoryOwner(kind="room", key="slack:helper:T1:C1")
CASES = [
    Case(id="dm-linked", direct=True, person_id=7, allow_personal=True, owner=MemoryOwner(kind="person", key="7")),
    Case(id="dm-unlinked", direct=True, person_id=None, allow_personal=True,
         owner=MemoryOwner(kind="identity", key="3")),
    Case(id="group-linked-speaker", direct=False, person_id=7, allow_personal=True, owner=ROOM),
    Case(id="dm-personal-off", direct=True, person_id=7, allow_personal=False, owner=None),
    Case(id="group-personal-off", direct=False, person_id=None, allow_personal=False, owner=ROOM),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
def test_the_owner_is_decided_by_the_conversation_not_the_speaker_alone(case: Case) -> None:
    address = ChatAddress(bot_id="helper", platform="slack", channel_id="T1:C1", is_direct=case.direct)
    assert memory_owner(address, identity_id=3, person_id=case.person_id,
                        allow_personal=case.allow_personal) == case.owner
