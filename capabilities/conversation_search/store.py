"""One person's earlier conversations, for `conversation_search`: whose they are is decided here, per question.

The corpus of a person is every conversation one of their identities (all those linked to the same
person) spoke in: their direct messages with any bot of this deployment, and group threads. A group
thread stays theirs only while they are still a member of its room, which is asked of the platform
through the bot that holds the thread (`Directory.is_member`) each time, never remembered: a person
removed from a channel loses its threads at once. A thread whose membership cannot be confirmed
right now is left out and counted, so the answer can say so instead of looking complete.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, func, select

from adapters.base import Directory, DirectoryRefused, Speaker
from capabilities.conversation_search.corpus import CorpusUnavailable, Found, ThreadHit, ThreadTurn, ThreadWindow
from capabilities.run.one_line import flatten
from storage.db import Database
from storage.fulltext import Match, matching_messages, passages
from storage.tables import CONVERSATIONS, IDENTITIES, MESSAGES

log = logging.getLogger(__name__)

TITLE_LIMIT = 80
MAX_GROUP_CHECKS = 30
"""Group threads whose membership one search asks the platforms about; matches past it count as unchecked."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Thread:
    id: int
    is_direct: bool
    bot_name: str
    platform: str
    channel_id: str
    speakers: frozenset[str]
    """The platform user ids under which this person spoke in it."""

    @property
    def where(self) -> str:
        kind = "direct message with" if self.is_direct else "group thread of"
        return f"{kind} bot {self.bot_name} on {self.platform.capitalize()}"


class PersonalConversations:
    """`capabilities.conversation_search.corpus.ConversationCorpus` for the person behind `speaker`."""

    def __init__(self, db: Database, directories: Mapping[str, Directory], *, speaker: Speaker,
                 current_conversation: str | None = None) -> None:
        self._db = db
        self._directories = directories
        """Every bot's channel lookups, by bot name: each thread is checked through the bot that holds it."""
        self._speaker = speaker
        self._current = current_conversation
        """The conversation asking: its newest user turn (the question itself) is not a search result."""

    async def search(self, query: str, *, limit: int) -> Found:
        def work(connection: Connection) -> tuple[dict[int, _Thread], list[Match]]:
            threads = self._threads(connection)
            asking = self._asking_turn(connection)
            found = matching_messages(connection, query, threads.keys())
            return threads, [m for m in found if m.message_id != asking]
        threads, matches = await self._db.run(work)
        by_thread: dict[int, list[Match]] = {}
        for match in matches:  # best first, so each thread's first match is its strongest
            by_thread.setdefault(match.conversation_id, []).append(match)
        ranked = sorted(by_thread.items(), key=lambda item: (-item[1][0].rank, -len(item[1])))
        chosen: list[tuple[_Thread, list[Match]]] = []
        unchecked = 0
        checks = 0
        checked: dict[tuple[str, str, str], bool | None] = {}
        for thread_id, thread_matches in ranked:
            if not threads[thread_id].is_direct:
                checks += 1
                if checks > MAX_GROUP_CHECKS:
                    unchecked += 1
                    continue
            readable = await self._readable(threads[thread_id], checked)
            if readable is None:
                unchecked += 1
            elif readable:
                chosen.append((threads[thread_id], thread_matches))
            if len(chosen) >= limit:
                break
        return Found(hits=await self._hits(query, chosen), unchecked=unchecked)

    async def read(self, thread: int, *, start: int, count: int) -> ThreadWindow | None:
        found = (await self._db.run(lambda connection: self._threads(connection, only=thread))).get(thread)
        if found is None:
            return None
        readable = await self._readable(found, {})
        if readable is None:
            raise CorpusUnavailable(f"the platform could not confirm membership of thread {thread} just now")
        if not readable:
            return None

        def window(connection: Connection) -> ThreadWindow:
            rows = connection.execute(
                select(MESSAGES.c.role, MESSAGES.c.speaker_name, MESSAGES.c.text, MESSAGES.c.identity_id,
                       MESSAGES.c.created_at).where(MESSAGES.c.conversation_id == thread)
                .order_by(MESSAGES.c.id)).all()
            people = {row.identity_id for row in rows if row.role == "user" and row.identity_id is not None}
            turns = tuple(ThreadTurn(role="assistant" if row.role == "assistant" else "user",
                                     speaker=row.speaker_name, text=row.text)
                          for row in rows[start - 1:start - 1 + count])
            title = next((row.text for row in rows if row.role == "user"), "")
            return ThreadWindow(thread=thread, title=flatten(title, limit=TITLE_LIMIT), where=found.where,
                                last_activity=rows[-1].created_at, total=len(rows), start=start, turns=turns,
                                several_people=not found.is_direct and len(people) > 1)
        return await self._db.run(window, single=True)

    def _threads(self, connection: Connection, *, only: int | None = None) -> dict[int, _Thread]:
        """Every conversation one of this person's identities spoke in."""
        identities = self._identities(connection)
        if not identities:
            return {}
        query = (select(CONVERSATIONS.c.id, CONVERSATIONS.c.is_direct, CONVERSATIONS.c.bot_name,
                        CONVERSATIONS.c.platform, CONVERSATIONS.c.channel_id, IDENTITIES.c.platform_user_id)
                 .join(MESSAGES, MESSAGES.c.conversation_id == CONVERSATIONS.c.id)
                 .join(IDENTITIES, IDENTITIES.c.id == MESSAGES.c.identity_id)
                 .where(MESSAGES.c.identity_id.in_(identities)).distinct())
        if only is not None:
            query = query.where(CONVERSATIONS.c.id == only)
        speakers: dict[int, set[str]] = {}
        rows = connection.execute(query).all()
        for row in rows:
            speakers.setdefault(row.id, set()).add(row.platform_user_id)
        return {row.id: _Thread(id=row.id, is_direct=row.is_direct, bot_name=row.bot_name, platform=row.platform,
                                channel_id=row.channel_id, speakers=frozenset(speakers[row.id])) for row in rows}

    def _identities(self, connection: Connection) -> list[int]:
        """The speaker's identity and every identity linked to the same person."""
        speaker = self._speaker
        own = connection.execute(select(IDENTITIES.c.id, IDENTITIES.c.person_id).where(
            IDENTITIES.c.platform == speaker.platform, IDENTITIES.c.workspace == speaker.workspace,
            IDENTITIES.c.platform_user_id == speaker.platform_user_id)).first()
        if own is None:
            return []
        if own.person_id is None:
            return [own.id]
        linked = connection.execute(select(IDENTITIES.c.id).where(IDENTITIES.c.person_id == own.person_id))
        return [int(identity_id) for identity_id in linked.scalars()]

    def _asking_turn(self, connection: Connection) -> int | None:
        if self._current is None:
            return None
        return connection.execute(
            select(func.max(MESSAGES.c.id)).join(CONVERSATIONS, CONVERSATIONS.c.id == MESSAGES.c.conversation_id)
            .where(CONVERSATIONS.c.key == self._current, MESSAGES.c.role == "user")).scalar()

    async def _readable(self, thread: _Thread, checked: dict[tuple[str, str, str], bool | None]) -> bool | None:
        """A direct message stays its person's; a group thread while they are a member (None: cannot tell now)."""
        if thread.is_direct:
            return True
        directory = self._directories.get(thread.bot_name)
        if directory is None:
            return False  # the bot holding the thread is gone: nothing can vouch for the membership
        verdicts: list[bool | None] = []
        for user_id in sorted(thread.speakers):
            key = (thread.bot_name, thread.channel_id, user_id)
            if key not in checked:
                checked[key] = await _member(directory, thread, user_id)
            verdicts.append(checked[key])
        if any(verdicts):
            return True
        return None if None in verdicts else False

    async def _hits(self, query: str, chosen: list[tuple[_Thread, list[Match]]]) -> list[ThreadHit]:
        if not chosen:
            return []
        ids = [thread.id for thread, _ in chosen]

        def work(connection: Connection) -> list[ThreadHit]:
            shown = passages(connection, query, [matches[0].message_id for _, matches in chosen])
            last: dict[int, datetime] = {conversation_id: at for conversation_id, at in connection.execute(
                select(MESSAGES.c.conversation_id, func.max(MESSAGES.c.created_at))
                .where(MESSAGES.c.conversation_id.in_(ids)).group_by(MESSAGES.c.conversation_id))}
            firsts = select(func.min(MESSAGES.c.id)).where(MESSAGES.c.conversation_id.in_(ids),
                                                           MESSAGES.c.role == "user").group_by(
                MESSAGES.c.conversation_id)
            titles: dict[int, str] = {conversation_id: text for conversation_id, text in connection.execute(
                select(MESSAGES.c.conversation_id, MESSAGES.c.text).where(MESSAGES.c.id.in_(firsts)))}
            positions = {thread.id: int(connection.execute(
                select(func.count()).select_from(MESSAGES).where(
                    MESSAGES.c.conversation_id == thread.id, MESSAGES.c.id <= matches[0].message_id)).scalar_one())
                for thread, matches in chosen}
            return [ThreadHit(thread=thread.id, title=flatten(titles.get(thread.id, ""), limit=TITLE_LIMIT),
                              where=thread.where, last_activity=_aware(last[thread.id]),
                              matching_turns=len(matches), position=positions[thread.id],
                              passage=flatten(shown.get(matches[0].message_id, ""), limit=400))
                    for thread, matches in chosen]
        return await self._db.run(work)


async def _member(directory: Directory, thread: _Thread, user_id: str) -> bool | None:
    try:
        return await directory.is_member(thread.channel_id, user_id)
    except DirectoryRefused:
        return False  # the bot cannot see the room any more, so nobody can be vouched for there
    except Exception as exc:  # the platform failing to answer right now
        log.warning("membership check for conversation %d through bot %r failed: %s: %s", thread.id,
                    thread.bot_name, type(exc).__name__, exc)
        return None


def _aware(value: datetime) -> datetime:
    """Stored times are UTC; a driver that hands one back without its zone gets it back."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
