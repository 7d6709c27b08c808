"""A delivery is parsed once: the event intake parsed reaches the item's claim in the same process; a claim that
cannot have it (another replica, a restart) parses the stored payload, which is kept for that."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from adapters.base import ChatAddress, Inbound, Speaker
from gateway.pipeline.inbox import Inbox
from gateway.pipeline.intake import Intake
from storage.db import Database

LEASE = timedelta(seconds=30)


class CountingParser:
    """Reads `{"chat": …, "id": …, "text": …}` as a DM, and counts how often it was asked."""

    def __init__(self) -> None:
        self.parsed = 0

    def parse(self, payload: Mapping[str, Any]) -> Inbound:
        self.parsed += 1
        address = ChatAddress(bot_id="bot", platform="telegram", channel_id=str(payload["chat"]), is_direct=True)
        speaker = Speaker(platform="telegram", platform_user_id=str(payload["chat"]), display_name="Ada")
        return Inbound(address=address, speaker=speaker, text=payload["text"], message_id=str(payload["id"]),
                       addressed="direct", raw=payload)


async def not_answered(_key: str) -> bool:
    return False


async def test_the_claim_in_the_same_process_gets_the_event_intake_parsed(db: Database) -> None:
    inbox, parser = Inbox(db), CountingParser()
    intake = Intake(inbox, {"bot": parser}, on_accepted=lambda: None, answered_in=not_answered)
    assert await intake.deliver("bot", {"chat": 7, "id": 1, "text": "hello"}) == "accepted"
    [item] = await inbox.claim("w1", lease=LEASE, limit=10)
    assert isinstance(item.event, Inbound) and item.event.text == "hello"
    assert parser.parsed == 1


async def test_a_claim_elsewhere_finds_the_payload_to_parse(db: Database) -> None:
    parser = CountingParser()
    intake = Intake(Inbox(db), {"bot": parser}, on_accepted=lambda: None, answered_in=not_answered)
    assert await intake.deliver("bot", {"chat": 7, "id": 1, "text": "hello"}) == "accepted"
    [item] = await Inbox(db).claim("w2", lease=LEASE, limit=10)  # another replica's inbox
    assert item.event is None
    assert parser.parse(item.payload).text == "hello"


async def test_a_retried_item_parses_its_payload_again(db: Database) -> None:
    inbox = Inbox(db)
    intake = Intake(inbox, {"bot": CountingParser()}, on_accepted=lambda: None, answered_in=not_answered)
    await intake.deliver("bot", {"chat": 7, "id": 1, "text": "hello"})
    [first] = await inbox.claim("w1", lease=LEASE, limit=10)
    await inbox.fail("w1", first, "boom")
    [again] = await inbox.claim("w1", lease=LEASE, limit=10)
    assert first.event is not None and again.event is None and again.payload["text"] == "hello"
