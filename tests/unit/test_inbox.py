"""The inbox contract: dedupe by logical key, one turn per conversation, leases that expire."""

from __future__ import annotations

from datetime import timedelta

from gateway.pipeline.inbox import MAX_ATTEMPTS, Inbox
from storage.db import Database

LEASE = timedelta(seconds=30)


async def accept(inbox: Inbox, logical_id: str, conversation: str = "c1") -> bool:
    return await inbox.accept(logical_id=logical_id, bot_name="bot", conversation_key=conversation,
                              payload={"id": logical_id})


async def test_a_redelivered_message_is_accepted_once(db: Database) -> None:
    inbox = Inbox(db)
    assert await accept(inbox, "telegram:bot:1:10") is True
    assert await accept(inbox, "telegram:bot:1:10") is False
    claimed = await inbox.claim("w1", lease=LEASE, limit=10)
    assert [item.payload for item in claimed] == [{"id": "telegram:bot:1:10"}]


async def test_a_conversation_runs_one_turn_at_a_time_in_order(db: Database) -> None:
    inbox = Inbox(db)
    for n in range(3):
        await accept(inbox, f"m{n}", conversation="c1")
    await accept(inbox, "other", conversation="c2")
    first = await inbox.claim("w1", lease=LEASE, limit=10)
    assert sorted(i.payload["id"] for i in first) == ["m0", "other"]
    assert await inbox.claim("w2", lease=LEASE, limit=10) == []
    head = next(i for i in first if i.payload["id"] == "m0")
    await inbox.complete("w1", head.id)
    second = await inbox.claim("w2", lease=LEASE, limit=10)
    assert [i.payload["id"] for i in second] == ["m1"]


async def test_an_expired_lease_is_claimed_again_with_its_reply(db: Database) -> None:
    inbox = Inbox(db)
    await accept(inbox, "m0")
    [item] = await inbox.claim("crashed", lease=timedelta(seconds=-1), limit=1)
    await inbox.remember_reply(item.id, "555")
    [again] = await inbox.claim("w2", lease=LEASE, limit=1)
    assert (again.id, again.attempts, again.reply_message_id) == (item.id, 2, "555")
    await inbox.complete("crashed", item.id)  # the crashed worker no longer owns it
    assert await inbox.claim("w3", lease=LEASE, limit=1) == []


async def test_a_turn_that_lost_its_lease_records_nothing_of_its_own(db: Database) -> None:
    """Its item is another worker's now, whose turn writes the answer: the first worker's last writes, which
    commit with the item's completion, would put a second answer in the history."""
    inbox = Inbox(db)
    await accept(inbox, "m0")
    [item] = await inbox.claim("stalled", lease=timedelta(seconds=-1), limit=1)
    [again] = await inbox.claim("w2", lease=LEASE, limit=1)
    written: list[str] = []
    assert await inbox.complete("stalled", item.id, also=lambda _connection: written.append("stalled")) is True
    assert written == []
    assert await inbox.complete("w2", again.id, also=lambda _connection: written.append("w2")) is False
    assert written == ["w2"]


async def test_a_failing_item_is_retried_then_given_up(db: Database) -> None:
    inbox = Inbox(db)
    await accept(inbox, "m0")
    await accept(inbox, "m1")
    for _ in range(MAX_ATTEMPTS):
        [item] = await inbox.claim("w", lease=LEASE, limit=1)
        assert item.payload["id"] == "m0"
        await inbox.fail("w", item, "boom")
    [next_item] = await inbox.claim("w", lease=LEASE, limit=1)
    assert next_item.payload["id"] == "m1"


async def test_live_leases_are_extended(db: Database) -> None:
    inbox = Inbox(db)
    await accept(inbox, "m0")
    [item] = await inbox.claim("w1", lease=timedelta(seconds=-1), limit=1)
    await inbox.extend_leases("w1", [item.id], lease=LEASE)
    assert await inbox.claim("w2", lease=LEASE, limit=1) == []


async def test_pruning_forgets_only_old_finished_items(db: Database) -> None:
    inbox = Inbox(db)
    await accept(inbox, "old")
    await accept(inbox, "waiting", conversation="c2")
    [old, _waiting] = await inbox.claim("w", lease=LEASE, limit=10)
    await inbox.complete("w", old.id)
    assert await inbox.prune(older_than=timedelta(days=1)) == 0
    assert await inbox.prune(older_than=timedelta(seconds=-1)) == 1
    assert await accept(inbox, "old") is True, "a pruned key is accepted again"
    assert await accept(inbox, "waiting", conversation="c2") is False


async def test_a_deferred_item_keeps_its_place_and_its_attempts(db: Database) -> None:
    inbox = Inbox(db)
    await accept(inbox, "m0")
    await accept(inbox, "m1")
    for _ in range(MAX_ATTEMPTS + 2):  # a long outage: many claims, none the turn's fault
        [item] = await inbox.claim("w", lease=LEASE, limit=1)
        assert item.payload["id"] == "m0"
        await inbox.defer("w", item, "ConnectionError: refused", delay=timedelta(seconds=-1))
    [item] = await inbox.claim("w", lease=LEASE, limit=1)
    assert (item.payload["id"], item.failures) == ("m0", 0)
    assert await inbox.fail("w", item, "boom") is False, "one failure of the turn itself is not the last"


async def test_a_waiting_item_is_not_claimed_before_its_time(db: Database) -> None:
    inbox = Inbox(db)
    await accept(inbox, "m0")
    await accept(inbox, "m1")
    [item] = await inbox.claim("w", lease=LEASE, limit=1)
    await inbox.defer("w", item, "ConnectionError: refused", delay=timedelta(minutes=1))
    assert await inbox.claim("w", lease=LEASE, limit=10) == [], "nor is the next message of its conversation"
