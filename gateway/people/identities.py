"""Speakers' identities and the persons they are linked to: one-time link codes, linking and unlinking."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from capabilities.memory_files.store import move_notes
from capabilities.run import MemoryOwner
from storage.db import Database, rows_changed
from storage.models import IdentityRow, LinkCodeRow, PersonRow
from storage.tables import utcnow

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
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, identity_id: int) -> Identity:
        async def work(session: AsyncSession) -> Identity:
            return _identity(await _row(session, identity_id))
        return await self._db.transaction(work)

    async def all(self) -> list[Identity]:
        async def work(session: AsyncSession) -> list[Identity]:
            rows = (await session.execute(select(IdentityRow).where(IdentityRow.is_bot.is_(False))
                                          .order_by(IdentityRow.person_id, IdentityRow.id))).scalars().all()
            return [_identity(row) for row in rows]
        return await self._db.transaction(work)

    async def issue_code(self, identity_id: int) -> IssuedCode:
        """A fresh code for this identity; any code it was given before stops working."""
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        now = utcnow()

        async def work(session: AsyncSession) -> IssuedCode:
            await session.execute(update(LinkCodeRow).where(
                LinkCodeRow.identity_id == identity_id, LinkCodeRow.used_at.is_(None),
                LinkCodeRow.retired_at.is_(None)).values(retired_at=now))
            row = LinkCodeRow(identity_id=identity_id, code_hash=code_hash(code), created_at=now,
                              expires_at=now + CODE_LIFETIME)
            session.add(row)
            return IssuedCode(code=code, expires_at=row.expires_at)
        return await self._db.transaction(work)

    async def redeem(self, identity_id: int, code: str) -> Redemption:
        """Link this identity with the one that was given `code`; wrong codes count towards a lockout."""
        async def work(session: AsyncSession) -> Redemption:
            now = utcnow()
            redeemer = await _row(session, identity_id, lock=True)
            if redeemer.link_locked_until is not None and redeemer.link_locked_until > now:
                return Refused(reason="locked", locked_until=redeemer.link_locked_until)
            issued = await _live_code(session, normalize_code(code), now)
            if issued is not None and issued.identity_id == identity_id:
                return Refused(reason="own_code")
            used = issued is not None and rows_changed(await session.execute(
                update(LinkCodeRow).where(LinkCodeRow.id == issued.id, LinkCodeRow.used_at.is_(None))
                .values(used_at=now))) == 1
            if issued is None or not used:
                return _count_failure(redeemer, now)
            redeemer.failed_link_attempts, redeemer.link_locked_until = 0, None
            person_id = await _link(session, issued.identity_id, identity_id)
            return Linked(person_id=person_id, other=_identity(await _row(session, issued.identity_id)))
        return await self._db.transaction(work)

    async def retire_code(self, code: str) -> bool:
        """Stop a live code from working (it was shown where others could read it); False when none matched."""
        async def work(session: AsyncSession) -> bool:
            now = utcnow()
            issued = await _live_code(session, normalize_code(code), now)
            if issued is None:
                return False
            issued.retired_at = now
            return True
        return await self._db.transaction(work)

    async def link(self, first_id: int, second_id: int) -> int:
        """Make two identities one person (an admin's shortcut for a code); returns the person id."""
        if first_id == second_id:
            raise ValueError(f"identity {first_id} cannot be linked to itself")

        async def work(session: AsyncSession) -> int:
            return await _link(session, first_id, second_id)
        return await self._db.transaction(work)

    async def unlink(self, identity_id: int) -> bool:
        """Detach this identity from its person; False when no other identity shares that person.

        The person's notes stay with the identities still linked; this one starts an empty store.
        """
        async def work(session: AsyncSession) -> bool:
            row = await _row(session, identity_id, lock=True)
            if row.person_id is None:
                return False
            others = (await session.execute(select(func.count()).select_from(IdentityRow).where(
                IdentityRow.person_id == row.person_id, IdentityRow.id != identity_id))).scalar_one()
            if not others:
                return False
            row.person_id, row.updated_at = None, utcnow()
            return True
        return await self._db.transaction(work)

    async def owners_of_identity(self, identity_id: int) -> list[MemoryOwner]:
        """Every store that holds notes about the human behind this identity."""
        identity = await self.get(identity_id)
        if identity.person_id is None:
            return [MemoryOwner(kind="identity", key=str(identity_id))]
        return await self.owners_of_person(identity.person_id)

    async def owners_of_person(self, person_id: int) -> list[MemoryOwner]:
        async def work(session: AsyncSession) -> list[MemoryOwner]:
            if await session.get(PersonRow, person_id) is None:
                raise UnknownIdentity(f"no person with id {person_id}; `gateway identities` lists them")
            ids = (await session.execute(select(IdentityRow.id).where(IdentityRow.person_id == person_id))).scalars()
            return [MemoryOwner(kind="person", key=str(person_id)),
                    *(MemoryOwner(kind="identity", key=str(i)) for i in ids)]
        return await self._db.transaction(work)


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def normalize_code(text: str) -> str:
    """Forgiving about case, spaces and dashes, as people type a code they read elsewhere."""
    return "".join(text.split()).replace("-", "").upper()


async def _live_code(session: AsyncSession, code: str, now: datetime) -> LinkCodeRow | None:
    if len(code) != CODE_LENGTH:
        return None
    found = await session.execute(select(LinkCodeRow).where(
        LinkCodeRow.code_hash == code_hash(code), LinkCodeRow.used_at.is_(None),
        LinkCodeRow.retired_at.is_(None), LinkCodeRow.expires_at > now))
    return found.scalar_one_or_none()


def _count_failure(redeemer: IdentityRow, now: datetime) -> Refused:
    redeemer.failed_link_attempts += 1
    if redeemer.failed_link_attempts >= MAX_FAILED_ATTEMPTS:
        redeemer.failed_link_attempts, redeemer.link_locked_until = 0, now + LOCKOUT
        return Refused(reason="locked", locked_until=redeemer.link_locked_until)
    return Refused(reason="invalid", attempts_left=MAX_FAILED_ATTEMPTS - redeemer.failed_link_attempts)


async def _link(session: AsyncSession, first_id: int, second_id: int) -> int:
    """One person for both; notes they kept apart move into it, and two persons merge into the first's."""
    first, second = await _row(session, first_id, lock=True), await _row(session, second_id, lock=True)
    person_id = first.person_id or second.person_id
    if person_id is None:
        person = PersonRow(display_name=first.display_name)
        session.add(person)
        await session.flush()
        person_id = person.id
    target = MemoryOwner(kind="person", key=str(person_id))
    for row in (first, second):
        if row.person_id is None:
            await move_notes(session, MemoryOwner(kind="identity", key=str(row.id)), target)
            row.person_id, row.updated_at = person_id, utcnow()
        elif row.person_id != person_id:
            merged = row.person_id
            await move_notes(session, MemoryOwner(kind="person", key=str(merged)), target)
            await session.execute(update(IdentityRow).where(IdentityRow.person_id == merged)
                                  .values(person_id=person_id, updated_at=utcnow()))
            await session.execute(delete(PersonRow).where(PersonRow.id == merged))
    return person_id


async def _row(session: AsyncSession, identity_id: int, *, lock: bool = False) -> IdentityRow:
    query = select(IdentityRow).where(IdentityRow.id == identity_id)
    row = (await session.execute(query.with_for_update() if lock else query)).scalar_one_or_none()
    if row is None:
        raise UnknownIdentity(f"no identity with id {identity_id}; `gateway identities` lists them")
    return row


def _identity(row: IdentityRow) -> Identity:
    return Identity(id=row.id, platform=row.platform, workspace=row.workspace, platform_user_id=row.platform_user_id,
                    handle=row.handle, display_name=row.display_name, person_id=row.person_id,
                    link_locked_until=row.link_locked_until)
