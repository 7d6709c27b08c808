"""Speakers' identities and the persons they are linked to: one-time link codes, linking and unlinking."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Connection, Row, func, insert, select, update

from capabilities.run import MemoryOwner, PersonalStore
from storage.db import Database
from storage.tables import FORMER_PERSONS, IDENTITIES, LINK_CODES, PERSONS, utcnow

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTVWXYZ23456789"
"""No 0/O, 1/I/L or U: a code is read off one screen and typed into another."""
CODE_LENGTH = 8
CODE_LIFETIME = timedelta(minutes=15)
MAX_FAILED_ATTEMPTS = 5
LOCKOUT = timedelta(minutes=15)


class UnknownIdentity(LookupError):
    """No identity with that id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    id: int
    platform: str
    workspace: str
    platform_user_id: str
    handle: str | None
    display_name: str
    person_id: int | None
    link_locked_until: datetime | None = None

    @property
    def label(self) -> str:
        handle = f" (@{self.handle})" if self.handle else ""
        return f"{self.display_name}{handle} on {self.platform.capitalize()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class IssuedCode:
    code: str
    """Shown once, in the DM that asked for it; only its hash is stored."""
    expires_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Linked:
    person_id: int
    other: Identity
    """The identity that asked for the code."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    reason: Literal["invalid", "locked", "own_code"]
    locked_until: datetime | None = None
    attempts_left: int = 0


Redemption = Linked | Refused


class Identities:
    def __init__(self, db: Database, *, stores: Sequence[PersonalStore] = ()) -> None:
        """`stores`: what capabilities keep about people (`Registry.personal_stores`), moved into the person when two
        accounts are linked; none: linking moves nothing."""
        self._db = db
        self._stores = tuple(stores)

    async def get(self, identity_id: int) -> Identity:
        return await self._db.run(lambda connection: _identity(_row(connection, identity_id)), single=True)

    async def all(self) -> list[Identity]:
        def work(connection: Connection) -> list[Identity]:
            rows = connection.execute(select(IDENTITIES).where(IDENTITIES.c.is_bot.is_(False))
                                      .order_by(IDENTITIES.c.person_id, IDENTITIES.c.id))
            return [_identity(row) for row in rows]
        return await self._db.run(work, single=True)

    async def issue_code(self, identity_id: int) -> IssuedCode:
        """A fresh code for this identity; any code it was given before stops working."""
        def work(connection: Connection) -> IssuedCode:
            # Drawn afresh on each try: a retry after a lost COMMIT that had landed retires the first code.
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            now = utcnow()
            expires_at = now + CODE_LIFETIME
            connection.execute(update(LINK_CODES).where(
                LINK_CODES.c.identity_id == identity_id, LINK_CODES.c.used_at.is_(None),
                LINK_CODES.c.retired_at.is_(None)).values(retired_at=now))
            connection.execute(insert(LINK_CODES).values(identity_id=identity_id, code_hash=code_hash(code),
                                                         created_at=now, expires_at=expires_at))
            return IssuedCode(code=code, expires_at=expires_at)
        return await self._db.run(work)

    async def redeem(self, identity_id: int, code: str) -> Redemption:
        """Link this identity with the one that was given `code`; wrong codes count towards a lockout."""
        def work(connection: Connection) -> Redemption:
            now = utcnow()
            redeemer = _row(connection, identity_id, lock=True)
            if redeemer.link_locked_until is not None and redeemer.link_locked_until > now:
                return Refused(reason="locked", locked_until=redeemer.link_locked_until)
            issued = _live_code(connection, normalize_code(code), now)
            if issued is not None and issued.identity_id == identity_id:
                return Refused(reason="own_code")
            # Claimed by compare-and-swap: of two redeemers of one code, only one sees its row change.
            used = issued is not None and connection.execute(
                update(LINK_CODES).where(LINK_CODES.c.id == issued.id, LINK_CODES.c.used_at.is_(None))
                .values(used_at=now)).rowcount == 1
            if issued is None or not used:
                return _count_failure(connection, identity_id, now)
            connection.execute(update(IDENTITIES).where(IDENTITIES.c.id == identity_id)
                               .values(failed_link_attempts=0, link_locked_until=None))
            person_id = _link(connection, issued.identity_id, identity_id, self._stores)
            return Linked(person_id=person_id, other=_identity(_row(connection, issued.identity_id)))
        return await self._db.run(work)

    async def retire_code(self, code: str) -> bool:
        """Stop a live code from working (it was shown where others could read it); False when none matched."""
        def work(connection: Connection) -> bool:
            now = utcnow()
            issued = _live_code(connection, normalize_code(code), now)
            if issued is None:
                return False
            connection.execute(update(LINK_CODES).where(LINK_CODES.c.id == issued.id).values(retired_at=now))
            return True
        return await self._db.run(work)

    async def link(self, first_id: int, second_id: int) -> int:
        """Make two identities one person (an admin's shortcut for a code); returns the person id."""
        if first_id == second_id:
            raise ValueError(f"identity {first_id} cannot be linked to itself")
        return await self._db.run(lambda connection: _link(connection, first_id, second_id, self._stores))

    async def unlink(self, identity_id: int) -> bool:
        """Detach this identity from its person; False when no other identity shares that person.

        The person's notes stay with the identities still linked; this one starts an empty store.
        """
        def work(connection: Connection) -> bool:
            row = _row(connection, identity_id, lock=True)
            if row.person_id is None:
                return False
            others = connection.execute(select(func.count()).select_from(IDENTITIES).where(
                IDENTITIES.c.person_id == row.person_id, IDENTITIES.c.id != identity_id)).scalar_one()
            if not others:
                return False
            connection.execute(update(IDENTITIES).where(IDENTITIES.c.id == identity_id)
                               .values(person_id=None, updated_at=utcnow()))
            return True
        return await self._db.run(work)

    async def owners_of_identity(self, identity_id: int) -> list[MemoryOwner]:
        """Every store that holds notes about the human behind this identity."""
        identity = await self.get(identity_id)
        if identity.person_id is None:
            return [MemoryOwner(kind="identity", key=str(identity_id))]
        return await self.owners_of_person(identity.person_id)

    async def owners_of_person(self, person_id: int) -> list[MemoryOwner]:
        def work(connection: Connection) -> list[MemoryOwner]:
            if connection.execute(select(PERSONS.c.id).where(PERSONS.c.id == person_id)).first() is None:
                raise UnknownIdentity(f"no person with id {person_id}; `gateway identities` lists them")
            ids = connection.execute(select(IDENTITIES.c.id).where(IDENTITIES.c.person_id == person_id)).scalars()
            former = connection.execute(select(FORMER_PERSONS.c.id).where(FORMER_PERSONS.c.person_id == person_id)
                                        .order_by(FORMER_PERSONS.c.id)).scalars()
            return [MemoryOwner(kind="person", key=str(person_id)),
                    *(MemoryOwner(kind="person", key=str(p)) for p in former),
                    *(MemoryOwner(kind="identity", key=str(i)) for i in ids)]
        return await self._db.run(work)


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def normalize_code(text: str) -> str:
    """Forgiving about case, spaces and dashes, as people type a code they read elsewhere."""
    return "".join(text.split()).replace("-", "").upper()


def _live_code(connection: Connection, code: str, now: datetime) -> Row[Any] | None:
    if len(code) != CODE_LENGTH:
        return None
    return connection.execute(select(LINK_CODES).where(
        LINK_CODES.c.code_hash == code_hash(code), LINK_CODES.c.used_at.is_(None),
        LINK_CODES.c.retired_at.is_(None), LINK_CODES.c.expires_at > now)).one_or_none()


def _count_failure(connection: Connection, identity_id: int, now: datetime) -> Refused:
    """One more wrong code (counted in the statement, on the row `redeem` holds locked); the last one allowed locks
    linking for `LOCKOUT` and starts the count again."""
    failed: int = connection.execute(update(IDENTITIES).where(IDENTITIES.c.id == identity_id)
                                     .values(failed_link_attempts=IDENTITIES.c.failed_link_attempts + 1)
                                     .returning(IDENTITIES.c.failed_link_attempts)).scalar_one()
    if failed >= MAX_FAILED_ATTEMPTS:
        locked_until = now + LOCKOUT
        connection.execute(update(IDENTITIES).where(IDENTITIES.c.id == identity_id)
                           .values(failed_link_attempts=0, link_locked_until=locked_until))
        return Refused(reason="locked", locked_until=locked_until)
    return Refused(reason="invalid", attempts_left=MAX_FAILED_ATTEMPTS - failed)


def _link(connection: Connection, first_id: int, second_id: int, stores: Sequence[PersonalStore]) -> int:
    """One person for both; what they kept apart moves into it, and two persons merge into the first's (the other
    becomes a former person of it, `FORMER_PERSONS`)."""
    first, second = _row(connection, first_id, lock=True), _row(connection, second_id, lock=True)
    person_id: int = first.person_id or second.person_id or connection.execute(
        insert(PERSONS).values(display_name=first.display_name).returning(PERSONS.c.id)).scalar_one()
    target = MemoryOwner(kind="person", key=str(person_id))
    for row in (first, second):
        if row.person_id is None:
            _move(connection, stores, MemoryOwner(kind="identity", key=str(row.id)), target)
            connection.execute(update(IDENTITIES).where(IDENTITIES.c.id == row.id)
                               .values(person_id=person_id, updated_at=utcnow()))
        elif row.person_id != person_id:
            merged = row.person_id
            _move(connection, stores, MemoryOwner(kind="person", key=str(merged)), target)
            connection.execute(update(IDENTITIES).where(IDENTITIES.c.person_id == merged)
                               .values(person_id=person_id, updated_at=utcnow()))
            # its row stays: what mem0 kept under its id is reached through `former_persons`, and no one else's
            connection.execute(update(FORMER_PERSONS).where(FORMER_PERSONS.c.person_id == merged)
                               .values(person_id=person_id))
            connection.execute(insert(FORMER_PERSONS).values(id=merged, person_id=person_id, merged_at=utcnow()))
    return person_id


def _move(connection: Connection, stores: Sequence[PersonalStore], source: MemoryOwner, target: MemoryOwner) -> None:
    for store in stores:
        store.move(connection, source, target)


def _row(connection: Connection, identity_id: int, *, lock: bool = False) -> Row[Any]:
    query = select(IDENTITIES).where(IDENTITIES.c.id == identity_id)
    row = connection.execute(query.with_for_update() if lock else query).one_or_none()
    if row is None:
        raise UnknownIdentity(f"no identity with id {identity_id}; `gateway identities` lists them")
    return row


def _identity(row: Row[Any]) -> Identity:
    return Identity(id=row.id, platform=row.platform, workspace=row.workspace, platform_user_id=row.platform_user_id,
                    handle=row.handle, display_name=row.display_name, person_id=row.person_id,
                    link_locked_until=row.link_locked_until)
