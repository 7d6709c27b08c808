"""One answer, shown as it streams: a placeholder edited about once a second, then the full text."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from adapters.base import ChatAddress, MessageRef
from adapters.markdown.chunking import split_text
from adapters.protocols import ChatOutput, FindsOwnPosts, PostsOnce
from gateway.pipeline.tasks import cancel_and_wait

log = logging.getLogger(__name__)

PLACEHOLDER = "…"


@dataclass(frozen=True, slots=True, kw_only=True)
class Placeholder:
    """What keeps a turn to one placeholder across its attempts.

    An attempt killed between posting the placeholder and recording its id leaves a "…" nobody recorded.
    Where the platform allows, the retry does not post a second one beside it: Mattermost returns the first
    post for the same `key`, and Slack and Mattermost read back the bot's own "…" after `answering`.
    Telegram can do neither: there the stray "…" stays (the window is one database write).
    """

    recorded_id: str | None
    """The placeholder an earlier attempt posted and recorded; edited again instead of posting."""
    record: Callable[[str], Awaitable[None]]
    """Stores the id of a placeholder just posted (or found), for the next attempt."""
    key: str
    """The same in every attempt of the turn: the logical id of the message answered."""
    answering: str
    """The platform id of the message answered: a stray placeholder was posted after it."""
    retried: bool
    """An earlier attempt ran: it may have posted a placeholder it did not record."""


class LiveReply:
    """Owns the throttling; a retried turn edits the placeholder its first attempt posted."""

    def __init__(self, adapter: ChatOutput, address: ChatAddress, *, placeholder: Placeholder | None = None) -> None:
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
        """`time.monotonic()` when this attempt first showed something in the chat (posted or adopted)."""
        self._flusher: asyncio.Task[None] | None = None

    @property
    def message_id(self) -> str | None:
        return self._ref.message_id if self._ref else None

    @property
    def shown_text(self) -> str:
        """Everything streamed so far (the preview may show less)."""
        return self._streamed

    async def start(self, *, record: bool = True) -> MessageRef:
        """Post the placeholder (or adopt the stored one) before the model is asked anything; `record=False`
        leaves storing its id to the caller (in the transaction that starts the turn)."""
        if self._ref is None:
            # No typing beside it: a message from the bot clears its typing status on Telegram and Mattermost, so
            # the placeholder is the sign. Typing is for a message that waits for its turn (`Intake`).
            self._ref = await self._first_post()
            self._shown = PLACEHOLDER
            self._last_edit = time.monotonic()
            self.posted_at = self._last_edit
            if self._placeholder is not None and record:
                await self._placeholder.record(self._ref.message_id)
        return self._ref

    async def _first_post(self) -> MessageRef:
        return await self._stray() or await self._post()

    async def _post(self) -> MessageRef:
        if self._placeholder is not None and isinstance(self._adapter, PostsOnce):
            return await self._adapter.send_once(self._address, PLACEHOLDER, key=self._placeholder.key)
        return await self._adapter.send(self._address, PLACEHOLDER)

    async def _stray(self) -> MessageRef | None:
        """The placeholder an earlier attempt posted but never recorded, where the platform can find it."""
        placeholder = self._placeholder
        if placeholder is None or not placeholder.retried or not isinstance(self._adapter, FindsOwnPosts):
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
        self._refresh()

    def notice(self, status: str) -> None:
        """Show a status line below the text so far (or alone in the placeholder) until it is replaced or
        cleared with "": what the run is doing between two streams. It never becomes part of the answer."""
        self._status = status
        self._refresh(cleared=not status)

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

    async def finish(self, text: str) -> list[MessageRef]:
        """Replace the placeholder with the answer; what does not fit continues in new messages."""
        await self.cancel()
        ref = await self.start()
        pieces = split_text(text, self._adapter.limits.max_edit_text) or ["(no answer)"]
        if pieces[0] != self._shown:
            await self._adapter.edit(ref, pieces[0])
        refs = [ref]
        for piece in pieces[1:]:
            refs.append(await self._adapter.send(self._address, piece))
        return refs

    async def cancel(self) -> None:
        if self._flusher is not None:
            await cancel_and_wait(self._flusher)
            self._flusher = None

    async def _flush_later(self) -> None:
        interval = self._adapter.limits.edit_interval
        await asyncio.sleep(max(0.0, self._last_edit + interval - time.monotonic()))
        if self._ref is None or self._wanted == self._shown or not self._wanted.strip():
            return
        wanted = self._wanted
        self._last_edit = time.monotonic()
        try:
            await self._adapter.edit(self._ref, wanted)
            self._shown = wanted
        except Exception as exc:  # a failed preview edit must not end the turn; finish() retries
            log.warning("live edit failed in %s: %s", self._address.conversation_key, exc)
        if self._wanted != self._shown:
            self._flusher = asyncio.create_task(self._flush_later())


def _preview(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
