"""What `conversation_search` reads: one person's earlier conversations, as the gateway draws that corpus.

The gateway binds a `ConversationCorpus` to the person a run answers (`capabilities/conversation_search/store.py`):
their direct messages with any bot of the deployment, through every identity linked to them, and the group
threads they spoke in and are still a member of, checked against the platform when asked. The model names
what to look for and which thread to open, never whose.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadHit:
    thread: int
    """The conversation's id: what `read_conversation` opens."""
    title: str
    """The thread's first words, flattened to one line."""
    where: str
    """`direct message with bot X on Slack`, `group thread of bot X on Telegram`."""
    last_activity: datetime
    matching_turns: int
    passage: str
    """The strongest matching turn's passage, matched words between `**`."""
    position: int
    """Where that turn is in the thread (1 for its first turn): a long thread can be opened there."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    hits: list[ThreadHit]
    unchecked: int = 0
    """Matching group threads left out because their membership could not be confirmed in this search (the
    platform did not answer, or more group threads matched than one search asks about)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadTurn:
    role: Literal["user", "assistant"]
    speaker: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadWindow:
    thread: int
    title: str
    where: str
    last_activity: datetime
    total: int
    """Turns in the whole thread."""
    start: int
    """The 1-based position of the window's first turn."""
    turns: tuple[ThreadTurn, ...]
    several_people: bool
    """More than one person spoke in it: each user turn is shown with its speaker's name."""


class CorpusUnavailable(Exception):
    """The platform could not confirm a membership right now; asking again may help."""


class ConversationCorpus(Protocol):
    """One person's conversations; every answer is checked against who may read them at the time of asking."""

    async def search(self, query: str, *, limit: int) -> Found:
        """The best threads for `query` (web-search syntax); raises `storage.fulltext.QueryProblem`."""
        ...

    async def read(self, thread: int, *, start: int, count: int) -> ThreadWindow | None:
        """Up to `count` turns from `start`; None when the thread is not this person's to read (or not there).

        Raises `CorpusUnavailable` when the membership cannot be checked right now."""
        ...
