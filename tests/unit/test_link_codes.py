"""One-time link codes: 15 minutes, single use, the newest only, hashed at rest, and a lockout for guessers."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from adapters.base import Speaker
from capabilities.memory_files.personal import PersonalNotes
from capabilities.memory_files.store import MemoryNotes
from capabilities.run import MemoryOwner
from gateway.people.identities import LOCKOUT, MAX_FAILED_ATTEMPTS, Identities, Linked, Refused, code_hash
from gateway.pipeline.conversations import Conversations
from storage.db import Database
from storage.models import IdentityRow, LinkCodeRow, utcnow


async def speaker(db: Database, platform: str, user_id: str, name: str = "Alice") -> int:
    workspace = "" if platform == "telegram" else "T0TEAM"
    return await Conversations(db).identity(Speaker(platform=platform, workspace=workspace,  # type: ignore[arg-type]
                                                    platform_user_id=user_id, display_name=name))


async def person_of(db: Database, identity_id: int) -> int | None:
    async with db.session() as session:
        return (await session.execute(select(IdentityRow.person_id).where(IdentityRow.id == identity_id))).scalar()


async def test_a_code_links_two_platforms_into_one_person_and_is_stored_only_as_a_hash(db: Database) -> None:
    telegram, slack = await speaker(db, "telegram", "1001"), await speaker(db, "slack", "U1")
    issued = await Identities(db).issue_code(telegram)
    outcome = await Identities(db).redeem(slack, issued.code.lower())
    assert isinstance(outcome, Linked) and outcome.other.id == telegram
    assert await person_of(db, telegram) == await person_of(db, slack) == outcome.person_id
    async with db.session() as session:
        [row] = (await session.execute(select(LinkCodeRow))).scalars().all()
    assert row.code_hash == code_hash(issued.code) and issued.code not in row.code_hash
    assert row.used_at is not None
    assert issued.expires_at - row.created_at == timedelta(minutes=15)


async def test_a_code_works_once(db: Database) -> None:
    owner, first, second = (await speaker(db, "telegram", "1001"), await speaker(db, "slack", "U1"),
                            await speaker(db, "slack", "U2", "Mallory"))
    issued = await Identities(db).issue_code(owner)
    assert isinstance(await Identities(db).redeem(first, issued.code), Linked)
    assert await Identities(db).redeem(second, issued.code) == Refused(reason="invalid",
                                                                       attempts_left=MAX_FAILED_ATTEMPTS - 1)
    assert await person_of(db, second) is None


async def test_an_expired_code_is_refused(db: Database) -> None:
    owner, other = await speaker(db, "telegram", "1001"), await speaker(db, "slack", "U1")
    issued = await Identities(db).issue_code(owner)
    async with db.session() as session:
        await session.execute(update(LinkCodeRow).values(expires_at=utcnow() - timedelta(seconds=1)))
    assert isinstance(await Identities(db).redeem(other, issued.code), Refused)
    assert await person_of(db, other) is None


async def test_asking_again_retires_the_previous_code(db: Database) -> None:
    owner, other = await speaker(db, "telegram", "1001"), await speaker(db, "slack", "U1")
    first = await Identities(db).issue_code(owner)
    second = await Identities(db).issue_code(owner)
    assert isinstance(await Identities(db).redeem(other, first.code), Refused)
    assert isinstance(await Identities(db).redeem(other, second.code), Linked)


async def test_repeated_wrong_codes_lock_linking_even_for_the_right_code(db: Database) -> None:
    owner, guesser = await speaker(db, "telegram", "1001"), await speaker(db, "slack", "U1")
    issued = await Identities(db).issue_code(owner)
    outcomes = [await Identities(db).redeem(guesser, "WRONG234") for _ in range(MAX_FAILED_ATTEMPTS)]
    assert [o.reason for o in outcomes if isinstance(o, Refused)] == ["invalid"] * (MAX_FAILED_ATTEMPTS - 1) + [
        "locked"]
    locked = await Identities(db).redeem(guesser, issued.code)
    assert isinstance(locked, Refused) and locked.reason == "locked"
    assert locked.locked_until is not None and locked.locked_until - utcnow() <= LOCKOUT
    async with db.session() as session:
        await session.execute(update(IdentityRow).values(link_locked_until=utcnow() - timedelta(seconds=1)))
    assert isinstance(await Identities(db).redeem(guesser, issued.code), Linked), "the lock ends, the code still works"


async def test_a_code_sent_back_to_the_account_that_asked_links_nothing_and_costs_no_attempt(db: Database) -> None:
    owner = await speaker(db, "telegram", "1001")
    issued = await Identities(db).issue_code(owner)
    assert await Identities(db).redeem(owner, issued.code) == Refused(reason="own_code")
    async with db.session() as session:
        row = await session.get(IdentityRow, owner)
        assert row is not None and row.failed_link_attempts == 0 and row.person_id is None


async def test_linking_brings_both_accounts_notes_into_one_store_without_losing_either(db: Database) -> None:
    telegram, slack = await speaker(db, "telegram", "1001"), await speaker(db, "slack", "U1")
    notes = MemoryNotes(db)
    await notes.write("assistant", MemoryOwner(kind="identity", key=str(telegram)), "MEMORY.md", "- tea.md")
    await notes.write("assistant", MemoryOwner(kind="identity", key=str(slack)), "MEMORY.md", "- trips.md")
    await notes.write("assistant", MemoryOwner(kind="identity", key=str(slack)), "trips.md", "Lisbon in May")
    person = await Identities(db, stores=[PersonalNotes(notes)]).link(telegram, slack)
    merged = MemoryOwner(kind="person", key=str(person))
    assert [n.path for n in await notes.list("assistant", merged)] == ["MEMORY.md", "trips.md"]
    assert await notes.read("assistant", merged, "MEMORY.md") == "- tea.md\n\n- trips.md"
    assert await notes.list("assistant", MemoryOwner(kind="identity", key=str(slack))) == []


async def test_linking_two_people_merges_them_into_one(db: Database) -> None:
    a, b, c, d = [await speaker(db, "slack", f"U{n}") for n in range(4)]
    first, second = await Identities(db).link(a, b), await Identities(db).link(c, d)
    await MemoryNotes(db).write("assistant", MemoryOwner(kind="person", key=str(second)), "x.md", "kept")
    assert await Identities(db, stores=[PersonalNotes(MemoryNotes(db))]).link(b, c) == first
    assert {await person_of(db, i) for i in (a, b, c, d)} == {first}
    assert await MemoryNotes(db).read("assistant", MemoryOwner(kind="person", key=str(first)), "x.md") == "kept"


async def test_a_merged_person_stays_among_the_owners_to_forget_and_its_id_is_never_given_again(db: Database) -> None:
    """A memory service outside this database keeps what it remembered under the person id it was written for: after
    links merge a third person into a second and that one into a first, forgetting the first reaches each id."""
    a, b, c, d, e, f, g, h = [await speaker(db, "slack", f"U{n}") for n in range(8)]
    first, second, third = [await Identities(db).link(x, y) for x, y in ((a, b), (c, d), (e, f))]
    assert await Identities(db).link(d, e) == second
    assert await Identities(db).link(b, c) == first
    owners = await Identities(db).owners_of_identity(f)
    assert [o.key for o in owners if o.kind == "person"] == [str(first), str(second), str(third)]
    assert {o.key for o in owners if o.kind == "identity"} == {str(i) for i in (a, b, c, d, e, f)}
    assert await Identities(db).link(g, h) not in (first, second, third)


async def test_unlinking_leaves_the_notes_with_the_accounts_still_linked(db: Database) -> None:
    telegram, slack = await speaker(db, "telegram", "1001"), await speaker(db, "slack", "U1")
    person = await Identities(db).link(telegram, slack)
    assert await Identities(db).unlink(slack) is True
    assert await person_of(db, slack) is None and await person_of(db, telegram) == person
    assert await Identities(db).unlink(telegram) is False, "nothing left to unlink from"
