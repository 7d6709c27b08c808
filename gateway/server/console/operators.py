"""Who may sign in to the console: the operators of gateway.yaml, each with an argon2 password hash."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from gateway.config.schema import ConsoleSpec
from gateway.server.errors import StartupError

_HASHER = PasswordHasher()


@functools.cache
def _unknown() -> str:
    """Checked against when the name is unknown, so a wrong name takes as long as a wrong password. Made at the first
    sign-in, not at import: one argon2 hash takes its 64 MiB and a tenth of a second."""
    return _HASHER.hash("an operator nobody configured")


@dataclass(frozen=True, slots=True, kw_only=True)
class Operator:
    name: str
    roles: frozenset[str]

    def may(self, role: str) -> bool:
        return role in self.roles


def hash_password(password: str) -> str:
    """An argon2id hash of `password` with the library's current parameters, for `console.operators[].password_hash`."""
    return _HASHER.hash(password)


class Operators:
    def __init__(self, hashes: Mapping[str, str], roles: Mapping[str, frozenset[str]]) -> None:
        self._hashes = dict(hashes)
        self._roles = dict(roles)

    @classmethod
    def of(cls, spec: ConsoleSpec, secret: Callable[[str], str | None]) -> Operators:
        """Each operator's hash read from its `${ENV_VAR}`; a missing or unreadable one stops the start (fail
        closed: nobody signs in with a hash that is not there)."""
        hashes: dict[str, str] = {}
        for i, operator in enumerate(spec.operators):
            variable = operator.password_hash[2:-1]
            value = secret(variable)
            if not value or not value.startswith("$argon2"):
                raise StartupError(f"console.operators[{i}].password_hash: {variable} is "
                                   f"{'not set' if not value else 'not an argon2 hash'}; set it to what "
                                   "`gateway console hash` prints")
            hashes[operator.name] = value
        return cls(hashes, {operator.name: frozenset(operator.roles) | {"operator"} for operator in spec.operators})

    def get(self, name: str) -> Operator | None:
        roles = self._roles.get(name)
        return None if roles is None else Operator(name=name, roles=roles)

    async def verify(self, name: str, password: str) -> Operator | None:
        """The operator whose password this is, or None; argon2 runs in a worker thread (tens of milliseconds)."""
        stored = self._hashes.get(name) or await asyncio.to_thread(_unknown)
        matches = await asyncio.to_thread(_matches, stored, password)
        return self.get(name) if matches and name in self._hashes else None


def _matches(stored: str, password: str) -> bool:
    try:
        return _HASHER.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False
