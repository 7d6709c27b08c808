"""One answer, shown as it streams: a message edited about once a second, then the full text.

Where a retry can find a stray first post again (Slack, Mattermost), the message is a "…" placeholder posted at
once; on Slack it is a native stream the text is appended to (`StreamsReplies`), and what the run is doing shows in
the thread's status line instead of in the message (`ShowsStatus`). Where it cannot (Telegram), nothing is posted
until there is text: the chat shows the platform's typing, refreshed until then, the first text is due one edit
interval after the turn began (an answer done by then is sent once, whole), and the first post's id is stored right
after it is posted; in a private chat the text shows as a draft (`ShowsDrafts`) and the answer is sent once,
when it is done, so no message is ever edited or left half-written.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from adapters.base import ChatAddress, MessageRef, Speaker
from adapters.markdown import split_text
from adapters.protocols import (
    AsksFeedback,
    ChatOutput,
    FindsOwnPosts,
    OffersStop,
    PostsOnce,
    ShowsDrafts,
    ShowsStatus,
    ShowsTyping,
    StreamsReplies,
)
from adapters.unreachable import never_sent

log = logging.getLogger(__name__)

PLACEHOLDER = "…"
TYPING_LASTS = 4.0
"""Seconds a typing indicator shows (Telegram: 5, or until the bot posts): it is sent again this often."""
DRAFT_RENEWED = 0.8
"""A draft is sent again, unchanged, after this share of the time it shows (Telegram: 30 s)."""
SENT_FROM_DRAFTS = "sent"
"""Recorded as the reply's message just before an answer shown as drafts is sent: the answer may be in the chat
from then on, and a retry that finds it posts nothing (the one message a crash could double)."""
TOOL_STATUS = {"search_documents": "Searching the knowledge base…", "web_search": "Searching the web…",
               "fetch_url": "Reading a web page…", "run_python": "Running code…"}
"""The status line of a tool call, for the tools whose name says too little; others read from their name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Placeholder:
    """What keeps a turn to one reply message across its attempts.

    An attempt killed between posting its first message and recording its id leaves a message nobody recorded.
    Where the platform allows, the retry does not post a second one beside it: Mattermost returns the first
    post for the same `key`, and Slack and Mattermost read back the bot's own "…" after `answering`.
    Telegram can do neither: there the first post waits for text and is recorded at once, so a kill leaves
    a stray only between `sendMessage`'s answer and that one write, and the stray is the first text, not a "…".
    """

    recorded_id: str | None
    """The message an earlier attempt posted and recorded; edited again instead of posting."""
    record: Callable[[str | None], Awaitable[None]]
    """Stores the id of a message just posted (or found), for the next attempt; None forgets an earlier record."""
    key: str
    """The same in every attempt of the turn: the logical id of the message answered."""
    answering: str | None
    """The platform id of the message answered: a stray placeholder was posted after it. None: no message asked for
    this reply (a firing), so a stray cannot be looked for; Mattermost's `key` still holds it to one post."""
    retried: bool
    """An earlier attempt ran: it may have posted a placeholder it did not record."""


def waits_for_text(adapter: ChatOutput) -> bool:
    """Whether the first post waits for text, typing shown meanwhile: a platform where a retry could neither
    find a stray "…" again nor post idempotently, and that shows typing."""
    return _waits_for_text(type(adapter))


@functools.cache
def _waits_for_text(kind: type) -> bool:
    # By class, once: the three protocols are methods only, and a protocol isinstance costs ~15 µs on Python 3.11.
    return issubclass(kind, ShowsTyping) and not issubclass(kind, PostsOnce | FindsOwnPosts)


class LiveReply:
    """Owns the throttling; a retried turn edits the message its first attempt posted."""

    def __init__(self, adapter: ChatOutput, address: ChatAddress, *, placeholder: Placeholder | None = None,
                 posting: Callable[[], None] | None = None, typed_at: float | None = None,
                 recipient: Speaker | None = None) -> None:
        """`posting` is told just before the first post, which clears the platform's typing indicator. `typed_at`:
        when typing was shown for this message while it queued (`TypingShown`), so it is sent again only when that
        runs out. `recipient`: the person answered, for whom a native stream is opened (none: no stream)."""
        self._posting = posting or (lambda: None)
        self._recipient = recipient
        self._status_line = isinstance(adapter, ShowsStatus) and adapter.shows_status(address)
        self._drafts = isinstance(adapter, ShowsDrafts) and adapter.shows_drafts(address)
        self._draft_id = _draft_id(placeholder.key if placeholder else f"{address.conversation_key}:{time.time()}")
        self._drafted_at = 0.0
        self._line: str = ""
        """The status line wanted under the thread; `_line_shown` what it shows."""
        self._line_shown: str = ""
        self._liner: asyncio.Task[None] | None = None
        self._typed_at = typed_at
        self._adapter = adapter
        self._address = address
        self._placeholder = placeholder
        recorded = placeholder.recorded_id if placeholder else None
        self._ref = MessageRef(address=address, message_id=recorded) if recorded else None
        self._shown: str | None = None
        self._wanted = ""
        self._streamed = ""
        self._status = ""
        self._last_edit = 0.0
        self.posted_at: float | None = None
        """`time.monotonic()` when this attempt first showed something in the chat (posted, adopted, or typing
        where the first post waits for text)."""
        self._flusher: asyncio.Task[None] | None = None
        self._typing: asyncio.Task[None] | None = None
        self._first: asyncio.Task[MessageRef] | None = None
        """The first post where it waits for text: one task, so a flush and `finish` never post it twice."""
        self.stoppable = False
        """While true (the model is asked), what is shown carries a Stop button where the platform has buttons."""
        self._buttoned = False
        """The message shows a Stop button: `finish` edits it even when the text is the same, to take it away."""

    @property
    def message_id(self) -> str | None:
        return self._ref.message_id if self._ref else None

    @property
    def shown_text(self) -> str:
        """Everything streamed so far (the preview may show less)."""
        return self._streamed

    async def start(self, *, record: bool = True) -> MessageRef | None:
        """The first sign, before the model is asked anything: the placeholder posted (or the stored one adopted),
        or, where the first post waits for text, typing (None: nothing posted yet). `record=False` leaves storing
        a placeholder posted here to the caller (in the transaction that starts the turn); a first post that waits
        for text is always stored at once, by `Placeholder.record`."""
        if self._ref is not None or self._typing is not None:
            return self._ref
        if waits_for_text(self._adapter):
            # The first text waits one edit interval, as every later edit does: typing shows meanwhile, and an
            # answer done by then is sent once, whole, instead of as a first text and an edit (or a draft).
            self._last_edit = time.monotonic()
            self._typing = asyncio.create_task(self._keep_typing())
            return None
        # No typing beside it: a message from the bot clears its typing status on Mattermost, so the placeholder
        # is the sign. Typing is for a message that waits for its turn (`Intake`).
        self._posting()
        self._ref = await self._first_post()
        self._shown = PLACEHOLDER
        self._last_edit = time.monotonic()
        self.posted_at = self._last_edit
        if self._placeholder is not None and record:
            await self._placeholder.record(self._ref.message_id)
        return self._ref

    async def _keep_typing(self) -> None:
        """Typing until the first post: Telegram shows it for 5 seconds, so it is sent again every TYPING_LASTS."""
        assert isinstance(self._adapter, ShowsTyping)
        if self._typed_at is not None:  # still showing since the message queued
            self.posted_at = time.monotonic()
            await asyncio.sleep(max(0.0, self._typed_at + TYPING_LASTS - self.posted_at))
        while True:
            if self._drafted_at:  # a draft shows: sent again before it lapses, instead of typing
                assert isinstance(self._adapter, ShowsDrafts)
                renew = self._drafted_at + self._adapter.draft_lasts * DRAFT_RENEWED - time.monotonic()
                if renew > 0:
                    await asyncio.sleep(renew)
                    continue
                await self._show_draft(self._shown or "")
                continue
            try:
                await self._adapter.show_typing(self._address)
                if self.posted_at is None:
                    self.posted_at = time.monotonic()
            except Exception as exc:  # the typing indicator is a courtesy; its failure changes nothing
                log.debug("typing indicator failed in %s: %s", self._address.conversation_key, exc)
            await asyncio.sleep(TYPING_LASTS)

    async def _show_draft(self, text: str) -> None:
        """The text so far as the reply's draft; a failed draft costs the preview, never the answer."""
        assert isinstance(self._adapter, ShowsDrafts)
        self._drafted_at = time.monotonic()
        self._shown = text
        try:
            await self._adapter.show_draft(self._address, self._draft_id, text)
        except Exception as exc:
            log.warning("draft failed in %s: %s", self._address.conversation_key, exc)

    async def _posted_once(self, text: str, *, record: bool = True) -> MessageRef:
        """The reply's message: the one already posted, or the first post with `text`, stored at once unless
        `record` is false (the whole answer, whose turn's end is committed next and stores it)."""
        if self._ref is not None:
            return self._ref
        if self._first is None or self._first.done():  # done without a message: that post failed, try again
            self._first = asyncio.create_task(self._post_first(text, record=record))
        # Shielded: a flush cancelled by `finish` must not cut the post off between its call and its record.
        return await asyncio.shield(self._first)

    async def _post_first(self, text: str, *, record: bool = True) -> MessageRef:
        await self._stop_typing()  # before the post, which clears it: a late typing call would show it again
        self._posting()
        if self.stoppable and isinstance(self._adapter, OffersStop):
            ref = await self._adapter.send_live(self._address, text)
            self._buttoned = True
        else:
            ref = await self._adapter.send(self._address, text)
        self._ref, self._shown = ref, text
        self._last_edit = time.monotonic()
        self.posted_at = self.posted_at or self._last_edit
        if self._placeholder is not None and record:
            await self._placeholder.record(ref.message_id)
        return ref

    async def _stop_typing(self) -> None:
        if self._typing is not None:
            await _ended(self._typing)

    async def _first_post(self) -> MessageRef:
        return await self._stray() or await self._post()

    async def _post(self) -> MessageRef:
        if self._recipient is not None and isinstance(self._adapter, StreamsReplies):
            return await self._adapter.open_stream(self._address, self._recipient)
        if self._placeholder is not None and isinstance(self._adapter, PostsOnce):
            return await self._adapter.send_once(self._address, PLACEHOLDER, key=self._placeholder.key)
        return await self._adapter.send(self._address, PLACEHOLDER)

    async def _stray(self) -> MessageRef | None:
        """The placeholder an earlier attempt posted but never recorded, where the platform can find it."""
        placeholder = self._placeholder
        if placeholder is None or not placeholder.retried or not isinstance(self._adapter, FindsOwnPosts) \
                or placeholder.answering is None:
            return None
        try:
            found = await self._adapter.find_own_post(self._address, PLACEHOLDER, after=placeholder.answering)
        except Exception as exc:  # not finding it costs a second "…", not the answer
            log.warning("looking for an earlier placeholder in %s failed: %s", self._address.conversation_key, exc)
            return None
        if found is not None:
            log.info("adopting the placeholder an earlier attempt left in %s", self._address.conversation_key)
        return found

    def update(self, text: str) -> None:
        """Show the text so far; edits are coalesced to at most one per `edit_interval`."""
        self._streamed = text
        if self._line:
            self._set_line("")  # the run speaks again: what it was doing is done
        self._refresh()

    def notice(self, status: str) -> None:
        """Show a status line below the text so far (or alone in the placeholder) until it is replaced or
        cleared with "": what the run is doing between two streams. It never becomes part of the answer. Where
        the thread has a status line of its own (Slack), it shows there instead."""
        if self._status_line:
            self._set_line(status)
            return
        self._status = status
        self._refresh(cleared=not status)

    def calling(self, tool_name: str) -> None:
        """A tool call begins: where the thread has a status line, it says so ("Searching the knowledge base…")."""
        if self._status_line:
            self._set_line(tool_status(tool_name))

    def _set_line(self, status: str) -> None:
        self._line = status
        if self._liner is None or self._liner.done():
            self._liner = asyncio.create_task(self._show_line())

    async def _show_line(self) -> None:
        """Until the status line shows what is wanted: one call at a time, the latest status winning."""
        assert isinstance(self._adapter, ShowsStatus)
        while self._line != self._line_shown:
            line = self._line
            try:
                await self._adapter.set_status(self._address, line)
            except Exception as exc:  # the status line is a courtesy; its failure changes nothing
                log.debug("status line failed in %s: %s", self._address.conversation_key, exc)
            self._line_shown = line

    def _refresh(self, *, cleared: bool = False) -> None:
        limit = self._adapter.limits.max_edit_text
        if not self._status:
            self._wanted = _preview(self._streamed, limit)
        elif self._streamed.strip():
            body = _preview(self._streamed, max(1, limit - len(self._status) - 2))
            self._wanted = _preview(f"{body}\n\n{self._status}", limit)
        else:
            self._wanted = _preview(self._status, limit)
        if cleared and not self._wanted.strip():
            self._wanted = PLACEHOLDER  # the status was all the placeholder showed
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_later())

    async def finish(self, text: str, *, rated_run: int | None = None) -> list[MessageRef]:
        """Replace the placeholder (or the text so far) with the answer, or post it first where the first post
        waits for text; what does not fit continues in new messages. `rated_run`: the answer's last message carries
        👍 / 👎 for that run, where the platform has them (`AsksFeedback`)."""
        await self.cancel()
        pieces = split_text(text, self._adapter.limits.max_edit_text) or ["(no answer)"]
        rated = rated_run if isinstance(self._adapter, AsksFeedback) else None
        if self._ref is None and self._drafts:
            return await self._send_drafted(pieces, rated)
        ref = await self._message(pieces[0], whole=len(pieces) == 1)
        if rated is not None and len(pieces) == 1:
            assert isinstance(self._adapter, AsksFeedback)
            await self._adapter.edit_rated(ref, pieces[0], run_id=rated)
            self._buttoned = False
        elif isinstance(self._adapter, StreamsReplies):
            await self._adapter.close_stream(ref, pieces[0])
        elif pieces[0] != self._shown or self._buttoned:
            await self._adapter.edit(ref, pieces[0])
            self._buttoned = False
        refs = [ref]
        for at, piece in enumerate(pieces[1:], start=2):
            refs.append(await self._send(piece, rated if at == len(pieces) else None))
        if self._line_shown:  # a post clears it; an edit does not
            self._set_line("")
            await self.cancel()
        return refs

    async def _send(self, piece: str, rated: int | None) -> MessageRef:
        """A new message of the answer; the last one carries the feedback buttons of run `rated`, if any."""
        if rated is not None and isinstance(self._adapter, AsksFeedback):
            return await self._adapter.send_rated(self._address, piece, run_id=rated)
        return await self._adapter.send(self._address, piece)

    async def _send_drafted(self, pieces: list[str], rated: int | None) -> list[MessageRef]:
        """The answer shown as drafts, sent once (the buttons on its last message). Recorded as sent first: a kill
        between the record and Telegram's answer leaves the retry sending nothing, rather than a second answer."""
        if self._placeholder is not None:
            await self._placeholder.record(SENT_FROM_DRAFTS)
        self._posting()
        try:
            first = await self._send(pieces[0], rated if len(pieces) == 1 else None)
        except Exception as exc:
            if self._placeholder is not None and never_sent(exc):
                await self._placeholder.record(None)  # it never left: the retry sends it, and nothing is lost
            raise
        refs = [first, *[await self._send(piece, rated if at == len(pieces) else None)
                          for at, piece in enumerate(pieces[1:], 2)]]
        self._ref, self._shown = refs[0], pieces[0]
        self.posted_at = self.posted_at or time.monotonic()
        return refs

    async def _message(self, text: str, *, whole: bool) -> MessageRef:
        """The message the answer's first piece goes in. `whole`: that piece is the whole answer, so a first post
        of it is not stored on its own: the turn's end, committed next, is what a retry reads (a kill between the
        post and that commit doubles it, as one between the post and its own record would)."""
        if self._ref is None and waits_for_text(self._adapter):
            return await self._posted_once(text, record=not whole)
        ref = await self.start()
        assert ref is not None  # a placeholder was posted or adopted
        return ref

    async def cancel(self) -> None:
        """Stop the edits and the typing running in the background. A first post under way completes, its id
        stored, before this returns: a turn cut short (a shutdown) leaves a message its retry edits."""
        if self._flusher is not None:
            await _ended(self._flusher)
            self._flusher = None
        if self._liner is not None:
            await asyncio.wait([self._liner])  # the status line it set last is the one to clear
        await self._stop_typing()
        if self._first is not None:
            await asyncio.wait([self._first])  # its failure, if any, was the flush's to report (or finish retries)

    async def _flush_later(self) -> None:
        interval = self._adapter.limits.edit_interval
        await asyncio.sleep(max(0.0, self._last_edit + interval - time.monotonic()))
        if self._wanted == self._shown or not self._wanted.strip():
            return
        # A first post is text (the answer so far, or a status line), never a bare "…" the typing stands for.
        first = self._ref is None and waits_for_text(self._adapter) and self._wanted != PLACEHOLDER
        if self._ref is None and not first:
            return
        wanted = self._wanted
        self._last_edit = time.monotonic()
        try:
            if self._ref is None and self._drafts:
                await self._show_draft(wanted)
            elif self._ref is None:
                await self._posted_once(wanted)
            elif self.stoppable and isinstance(self._adapter, OffersStop):
                self._buttoned = True  # before the call: an edit cut off may still have shown it
                await self._adapter.edit_live(self._ref, wanted)
                self._shown = wanted
            else:
                await self._adapter.edit(self._ref, wanted)
                self._shown = wanted
        except Exception as exc:  # a failed preview must not end the turn; finish() retries
            log.warning("live edit failed in %s: %s", self._address.conversation_key, exc)
        if self._wanted != self._shown:
            self._flusher = asyncio.create_task(self._flush_later())


def tool_status(tool_name: str) -> str:
    """The status line of a call to `tool_name`: "Searching the knowledge base…", "Reading plan…"."""
    if tool_name in TOOL_STATUS:
        return TOOL_STATUS[tool_name]
    verb, _, rest = tool_name.partition("_")
    verb = verb.lower()
    if rest and verb.isalpha() and len(verb) > 2:
        stem = verb[:-1] if verb.endswith("e") and not verb.endswith("ee") else verb
        return f"{stem.capitalize()}ing {rest.replace('_', ' ')}…"
    return f"Using {tool_name.replace('_', ' ')}…"


def _draft_id(key: str) -> int:
    """A non-zero draft id that stays the same for every attempt of a turn: its changes animate."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest()) % (2**31 - 1) + 1


def _preview(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


async def _ended(task: asyncio.Task[None]) -> None:
    """Cancel one of the reply's background tasks, each of which handles its own failures, and wait until it has
    ended; a cancellation of the caller meanwhile is passed on."""
    task.cancel()
    await asyncio.wait({task})
