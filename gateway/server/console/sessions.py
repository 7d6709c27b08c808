"""Console sign-ins kept in the database, so every replica knows them and signing out ends them everywhere.

The browser holds a random token in an HttpOnly cookie; the table holds its SHA-256 and the session's CSRF token,
which every form of the session carries back."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, insert, select, update

from storage.db import Database
from storage.tables import CONSOLE_SESSIONS, utcnow

KEPT = timedelta(days=1)
"""How long a session's row outlives its end; each sign-in deletes those older."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsoleSession:
    operator: str
    csrf_token: str
    expires_at: datetime

    def accepts(self, csrf_token: str | None) -> bool:
        """Whether a form's token is this session's (compared in constant time)."""
        return csrf_token is not None and hmac.compare_digest(csrf_token.encode(), self.csrf_token.encode())


class ConsoleSessions:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def start(self, operator: str, *, lasts: timedelta) -> str:
        """A new session for `operator`; returns the token for the cookie (stored only as its hash)."""
        token = secrets.token_urlsafe(32)

        csrf_token = secrets.token_urlsafe(32)

        def work(connection: Connection) -> None:
            now = utcnow()
            connection.execute(delete(CONSOLE_SESSIONS).where(CONSOLE_SESSIONS.c.expires_at < now - KEPT))
            connection.execute(insert(CONSOLE_SESSIONS).values(
                token_hash=_digest(token), operator=operator, csrf_token=csrf_token, created_at=now,
                expires_at=now + lasts))
        await self._db.run(work)
        return token

    async def find(self, token: str | None) -> ConsoleSession | None:
        """The live session of this cookie: not signed out, not expired."""
        if not token:
            return None

        def work(connection: Connection) -> ConsoleSession | None:
            row = connection.execute(select(CONSOLE_SESSIONS).where(
                CONSOLE_SESSIONS.c.token_hash == _digest(token), CONSOLE_SESSIONS.c.ended_at.is_(None),
                CONSOLE_SESSIONS.c.expires_at > utcnow())).one_or_none()
            return None if row is None else ConsoleSession(operator=row.operator, csrf_token=row.csrf_token,
                                                           expires_at=row.expires_at)
        return await self._db.run(work, single=True)

    async def end(self, token: str) -> None:
        def work(connection: Connection) -> None:
            connection.execute(update(CONSOLE_SESSIONS).where(CONSOLE_SESSIONS.c.token_hash == _digest(token))
                               .values(ended_at=utcnow()))
        await self._db.run(work, single=True)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
