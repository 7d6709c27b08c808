"""Who a Slack user id is: Slack events name people only by id, so names are looked up and kept a while.

`SlackAdapter.parse` must stay pure, yet the model should read "[Alice] ask @Bob" rather than user
ids. So before a payload is handed to the inbox, each transport asks `People.annotate` to add the
names of its speaker and of the users its text mentions (from `users.info`, cached). The names then
travel inside the stored payload, so every replica that parses it reads the same names, and a retry
after a crash needs no lookup. A lookup that fails or runs out of time leaves the id in place.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from adapters.wire import is_object

log = logging.getLogger(__name__)

PEOPLE_KEY = "gateway_people"
"""Top-level key of a stored payload under which the names of the people it mentions travel."""

_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackPerson:
    user_id: str
    handle: str | None
    """The account name (`name`), which Slack no longer shows but is stable."""
    display_name: str
    is_bot: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"handle": self.handle, "display_name": self.display_name, "is_bot": self.is_bot}

    @classmethod
    def from_json(cls, user_id: str, data: Mapping[str, Any]) -> SlackPerson:
        return cls(user_id=user_id, handle=data.get("handle"), display_name=str(data.get("display_name") or user_id),
                   is_bot=bool(data.get("is_bot")))

    @classmethod
    def from_user(cls, user: Mapping[str, Any]) -> SlackPerson:
        """From a `users.info` user object: the name shown in Slack, then the real name, then the account name."""
        profile: Mapping[str, Any] = user.get("profile") or {}
        name = profile.get("display_name") or profile.get("real_name") or user.get("real_name") or user.get("name")
        return cls(user_id=str(user["id"]), handle=user.get("name"), display_name=str(name or user["id"]),
                   is_bot=bool(user.get("is_bot")))


Lookup = Callable[[str], Awaitable[SlackPerson | None]]


class People:
    """Names by user id, each kept for `ttl` seconds; at most `size` are remembered."""

    def __init__(self, lookup: Lookup, *, ttl: float = 3600.0, size: int = 5000) -> None:
        self._lookup = lookup
        self._ttl = ttl
        self._size = size
        self._known: dict[str, tuple[float, SlackPerson | None]] = {}

    async def find(self, user_ids: Iterable[str], *, budget: float) -> dict[str, SlackPerson]:
        """The people among `user_ids` that could be found within `budget` seconds."""
        wanted = list(dict.fromkeys(user_ids))
        missing = [user_id for user_id in wanted if not self._fresh(user_id)]
        if missing:
            try:
                async with asyncio.timeout(budget):
                    await asyncio.gather(*(self._learn(user_id) for user_id in missing))
            except TimeoutError:
                log.warning("slack user lookups took longer than %.1fs; some names stay ids", budget)
        found = {user_id: self._known.get(user_id, (0.0, None))[1] for user_id in wanted}
        return {user_id: person for user_id, person in found.items() if person is not None}

    async def annotate(self, payload: Mapping[str, Any], *, skip: Iterable[str] = (),
                       budget: float = 2.0) -> dict[str, Any]:
        """The payload with the names of its speaker and of every user its text mentions, but `skip`, added."""
        skipped = set(skip)
        user_ids = [user_id for user_id in _people_in(payload) if user_id not in skipped]
        if not user_ids:
            return dict(payload)
        people = await self.find(user_ids, budget=budget)
        return {**payload, PEOPLE_KEY: {user_id: person.to_json() for user_id, person in people.items()}}

    def _fresh(self, user_id: str) -> bool:
        entry = self._known.get(user_id)
        return entry is not None and entry[0] > time.monotonic()

    async def _learn(self, user_id: str) -> None:
        try:
            person = await self._lookup(user_id)
        except Exception as exc:  # a name is a courtesy: the id stands in, and the next message tries again
            log.warning("slack users.info failed for %s: %s", user_id, exc)
            return
        if len(self._known) >= self._size:
            del self._known[next(iter(self._known))]
        # An unknown user is remembered too, for a shorter time, so a bad id is not looked up per message.
        ttl = self._ttl if person is not None else self._ttl / 10
        self._known[user_id] = (time.monotonic() + ttl, person)


def people_of(payload: Mapping[str, Any]) -> dict[str, SlackPerson]:
    """The names an annotated payload carries, by user id."""
    carried = payload.get(PEOPLE_KEY)
    if not is_object(carried):
        return {}
    return {str(user_id): SlackPerson.from_json(str(user_id), data) for user_id, data in carried.items()
            if is_object(data)}


def mentioned_users(text: str) -> list[str]:
    return _MENTION.findall(text)


def _people_in(payload: Mapping[str, Any]) -> list[str]:
    """The speaker (or clicker) of a payload and the users its text mentions."""
    event = payload.get("event")
    if is_object(event):
        speaker = [str(event["user"])] if isinstance(event.get("user"), str) else []
        text = event.get("text")
        return speaker + (mentioned_users(text) if isinstance(text, str) else [])
    user = payload.get("user")
    if is_object(user) and isinstance(user.get("id"), str):
        return [user["id"]]
    if isinstance(user_id := payload.get("user_id"), str):  # a slash command
        return [user_id]
    return []
