"""What `bench.ratio` notes on every local platform server, and the shape each platform's watch has.

A watch is a platform's local server that also keeps a `Record`: per message sent, when its chat first showed a
sign (typing or a post), its first post and its final text `answer <tag>`, and how long the platform waited
for its acknowledgement. `bench/watch_telegram.py`, `watch_slack.py` and `watch_mattermost.py` are the three.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, Self

ANSWER = "answer "
"""How every bench bot's final text starts (`bench/models.py`), followed by the message's tag."""
PLACEHOLDER = "…"


@dataclass(slots=True)
class Pending:
    tag: str
    sent: float
    first_sign: float | None = None
    first_post: float | None = None
    done: asyncio.Future[float] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchBot:
    """One bot account on a local server, with what its gateway or floor process is started with."""

    token: str
    app_token: str = ""
    """Slack's app-level token (Socket Mode); empty elsewhere."""
    username: str
    account: Any
    """The local server's own object for it: a Slack app, a Mattermost user, a Telegram bot's token."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchChat:
    key: str
    """The chat's id as the bot's calls name it, as text."""
    chat: Any
    """The local server's chat (channel) object."""
    speaker: Any
    """The person who writes in it."""
    private: bool


@dataclass
class Record:
    """Per message: the first sign, first post and final text in its chat; and every acknowledgement's wait."""

    in_flight: dict[str, deque[Pending]] = field(default_factory=dict)
    finals: dict[str, Pending] = field(default_factory=dict)
    recording: bool = False
    """Only while set are figures kept (the warm-up messages are not counted)."""
    signs: list[float] = field(default_factory=list)
    posts: list[float] = field(default_factory=list)
    final_latencies: list[float] = field(default_factory=list)
    acks: list[float] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)
    """The bot's API calls by method (Telegram, Slack) or route (Mattermost) while recording."""

    def called(self, method: str) -> None:
        if self.recording:
            self.calls[method] += 1

    def expect(self, key: str, tag: str) -> Pending:
        pending = Pending(tag=tag, sent=time.monotonic(), done=asyncio.get_running_loop().create_future())
        self.in_flight.setdefault(key, deque()).append(pending)
        self.finals[tag] = pending
        return pending

    def saw(self, key: str, at: float, *, post: bool, text: str = "") -> None:
        """A bot call in chat `key` (empty: unknown) at `at`: a sign, a post when `post`, and maybe a final text."""
        queue = self.in_flight.get(key)
        if queue:
            unsigned = next((p for p in queue if p.first_sign is None), None)
            if unsigned is not None:
                unsigned.first_sign = at
            unposted = next((p for p in queue if p.first_post is None), None) if post else None
            if unposted is not None:
                unposted.first_post = at
        if text.startswith(ANSWER):
            pending = self.finals.pop(text[len(ANSWER):], None)
            if pending is not None and pending.done is not None and not pending.done.done():
                pending.done.set_result(at)

    def acked(self, seconds: float) -> None:
        if self.recording:
            self.acks.append(seconds)

    async def settle(self, key: str, pending: Pending, within: float) -> bool:
        """Wait for `pending`'s final text; False after `within` seconds without it."""
        assert pending.done is not None
        try:
            async with asyncio.timeout(within):
                final = await pending.done
        except TimeoutError:
            return False
        finally:
            with contextlib.suppress(ValueError):
                self.in_flight[key].remove(pending)
        if self.recording:
            self.final_latencies.append(final - pending.sent)
            self.signs.append((pending.first_sign or final) - pending.sent)
            self.posts.append((pending.first_post or final) - pending.sent)
        return True


class Watch(Protocol):
    """A local platform server that keeps a `Record`; `bench.ratio` drives every platform through this.

    It is also an async context manager (the local server's own): started on entry, stopped on exit.
    """

    url: str
    record: Record

    def populate(self, bots: int, chats: int) -> tuple[list[BenchBot], list[BenchChat]]:
        """`bots` bot accounts and `chats` chats with the first one, each chat with its own person: the first
        half private, the rest groups where the bot is a member."""
        ...

    async def say(self, bot: BenchBot, chat: BenchChat, tag: str) -> Pending:
        """The chat's person writes `question <tag>` (mentioning the bot in a group)."""
        ...

    async def until_connected(self, bots: list[BenchBot], within: float) -> None:
        """Return once every one of `bots` polls (Telegram) or holds its socket (Slack) or event stream
        (Mattermost); `TimeoutError` after `within` seconds."""
        ...

    def shown(self, bot: BenchBot, chats: list[BenchChat]) -> list[str]:
        """The text of every message `bot` shows in `chats` now, thread replies included."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...
