"""Slack's surfaces for AI apps: a reply streamed into its message (`chat.startStream` / `appendStream` /
`stopStream`), and the welcome of a new assistant thread (`assistant.threads.setTitle`, `setSuggestedPrompts`).

A stream is append-only, so a reply streams only while each text continues the last one; any other text (the
model starting over after a tool call, an answer cut to the message's size, a failure notice), a stream Slack no
longer holds (`message_not_in_streaming_state`, about five minutes on) or one it refuses, ends the stream and the
same message is edited with `chat.update` from then on. What streams is remembered by this process only: a retry
on another process edits the message the earlier attempt recorded, as it edits a placeholder.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from slack_sdk.errors import SlackApiError

from adapters.base import MessageRef, Speaker
from adapters.slack.directory import channel
from adapters.slack.web import Blocks, SlackAnswer, SlackWebApi, refusal_answer
from adapters.wire import is_object, optional_text_id

log = logging.getLogger(__name__)

STREAM_TEXT_LIMIT = 12_000
"""Characters of `markdown_text` one streaming call takes."""
REFUSED_FOR = 600.0
"""Seconds a bot posts plain placeholders after Slack refused to start a stream, before it asks again."""
STREAMS_KEPT = 10_000
"""Streams remembered at most; the oldest is forgotten first (its next edit is a plain one)."""
PROMPTS_LIMIT = 4
"""Suggested prompts Slack shows in an assistant thread."""

Call = Callable[[str, Awaitable[SlackAnswer]], Awaitable[SlackAnswer]]


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantWelcome:
    """What a new assistant thread shows before anyone writes: its title and suggested prompts (`binding.title`,
    `binding.suggested_prompts`)."""

    title: str | None = None
    prompts: Sequence[tuple[str, str]] = ()
    """(title, message) pairs."""


class SlackStreams:
    """The streams this process holds open, by message `ts`, with the Markdown each has shown so far."""

    def __init__(self, client: SlackWebApi, call: Call) -> None:
        self._client = client
        self._call = call
        self._open: OrderedDict[str, str] = OrderedDict()
        self._refused_until = 0.0

    def refused(self) -> bool:
        """Whether Slack refused a stream lately: a reply posts a plain placeholder meanwhile."""
        return time.monotonic() < self._refused_until

    async def start(self, room: str, thread_ts: str, recipient: Speaker | None) -> str | None:
        """The `ts` of a new, empty streaming reply in the thread; None when Slack refuses it (remembered for a
        while). Outside DMs Slack needs the person the stream is for (`recipient_user_id` and `_team_id`)."""
        extra: dict[str, Any] = {}
        if recipient is not None and not room.startswith("D"):
            extra = {"recipient_user_id": recipient.platform_user_id, "recipient_team_id": recipient.workspace}
        try:
            answer = await self._call("chat.startStream", self._client.chat_startStream(
                channel=room, thread_ts=thread_ts, **extra))
        except SlackApiError as exc:
            if refusal_answer(exc).status_code == 429:
                raise
            log.warning("slack refused to stream a reply (%s); plain edits for the next %.0f s",
                        refusal_answer(exc).get("error"), REFUSED_FOR)
            self._refused_until = time.monotonic() + REFUSED_FOR
            return None
        ts = optional_text_id(answer.get("ts"), "slack chat.startStream ts")
        if ts is not None:
            self._open[ts] = ""
            while len(self._open) > STREAMS_KEPT:
                self._open.popitem(last=False)
        return ts

    async def append(self, ref: MessageRef, markdown: str) -> bool:
        """Stream what `markdown` adds to what `ref` shows; False when it cannot (the caller edits instead), the
        stream then ended."""
        shown = self._open.get(ref.message_id)
        if shown is None:
            return False
        if not markdown.startswith(shown) or len(markdown) - len(shown) > STREAM_TEXT_LIMIT:
            await self.stop(ref)
            return False
        if markdown == shown:
            return True
        if not await self._streamed("chat.appendStream", self._client.chat_appendStream(
                channel=channel(ref.address.channel_id), ts=ref.message_id, markdown_text=markdown[len(shown):]),
                ref):
            return False
        self._open[ref.message_id] = markdown
        return True

    async def stop(self, ref: MessageRef, markdown: str | None = None, *,
                   blocks: Blocks | None = None) -> bool:
        """End the stream, with what `markdown` adds to it (None: nothing) and `blocks` at the message's foot. False
        when `ref` was not streaming here, or the rest could not be streamed (the caller edits instead)."""
        shown = self._open.get(ref.message_id)
        if shown is None:
            return False
        rest = markdown[len(shown):] if markdown is not None and markdown.startswith(shown) else None
        fits = rest is not None and len(rest) <= STREAM_TEXT_LIMIT
        stopped = await self._streamed("chat.stopStream", self._client.chat_stopStream(
            channel=channel(ref.address.channel_id), ts=ref.message_id, markdown_text=(rest or None) if fits else None,
            blocks=blocks), ref)
        self._open.pop(ref.message_id, None)
        return stopped and (markdown is None or fits)

    async def _streamed(self, method: str, request: Awaitable[SlackAnswer], ref: MessageRef) -> bool:
        """One streaming call; False (the stream forgotten) when Slack no longer streams that message."""
        try:
            await self._call(method, request)
        except SlackApiError as exc:
            if refusal_answer(exc).status_code == 429:
                raise
            log.info("slack ended the stream of %s (%s): edited from now on", ref.message_id,
                     refusal_answer(exc).get("error"))
            self._open.pop(ref.message_id, None)
            return False
        return True


async def welcome(client: SlackWebApi, call: Call, event: Mapping[str, Any], greeting: AssistantWelcome) -> None:
    """Title and suggested prompts for the assistant thread an `assistant_thread_started` event opened."""
    thread = event.get("assistant_thread")
    if not is_object(thread):
        return
    room = optional_text_id(thread.get("channel_id"), "slack assistant_thread.channel_id")
    thread_ts = optional_text_id(thread.get("thread_ts"), "slack assistant_thread.thread_ts")
    if room is None or thread_ts is None:
        return
    if greeting.title:
        await call("assistant.threads.setTitle", client.assistant_threads_setTitle(
            channel_id=room, thread_ts=thread_ts, title=greeting.title))
    if greeting.prompts:
        prompts = [{"title": title, "message": message} for title, message in greeting.prompts[:PROMPTS_LIMIT]]
        await call("assistant.threads.setSuggestedPrompts", client.assistant_threads_setSuggestedPrompts(
            channel_id=room, thread_ts=thread_ts, prompts=prompts))
