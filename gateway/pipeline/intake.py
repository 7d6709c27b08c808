"""Where every transport hands its payloads: parse once, drop what is not for the bot, commit the rest."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from adapters.base import FEEDBACK_VERBS, ApprovalClick, ChatAddress, Deliver, Inbound, MalformedPayload, MessageRef
from adapters.protocols import FollowsThreads, Parser, Reacts, ShowsStatus, ShowsTyping
from gateway.pipeline.inbox import Inbox, at_once
from gateway.pipeline.live_reply import TYPING_LASTS
from gateway.pipeline.metrics import AckOutcome, GatewayMetrics

log = logging.getLogger(__name__)

KEY_LIMIT = 512
"""Characters of the inbox's `logical_id` and `conversation_key` columns."""


KEPT_AT_MOST = 60.0
"""Seconds a queued message's sign is kept up at most by the replica that accepted it: its turn may run on another
replica, whose first post this one never sees."""
SEEN = "👀"
"""The reaction on a person's message, where the binding asks for one (Telegram), until it is answered."""
WORKING = "is working on it…"
"""The status line shown under a Slack thread while its message waits for its turn."""


class TypingShown:
    """The first sign of each conversation whose message waits for its turn: typing (Telegram, Mattermost) or a
    status line (Slack), shown at once and kept up until the turn starts; and the one-off reactions (`spawn`). A post
    by the bot clears the indicator, so a turn that posts there forgets it: the next message to queue is shown it
    again at once."""

    def __init__(self) -> None:
        self._at: dict[str, float] = {}
        self._kept: dict[str, asyncio.Task[None]] = {}
        self._once: set[asyncio.Task[None]] = set()

    def spawn(self, show: Awaitable[None]) -> None:
        """Show a one-off sign (a reaction) in the background: the ack does not wait for it, and its failure is
        only logged."""
        task = asyncio.ensure_future(_quietly(show))
        self._once.add(task)
        task.add_done_callback(self._once.discard)

    def due(self, conversation_key: str) -> bool:
        """Whether to show typing now; if so, it counts as shown."""
        now = time.monotonic()
        if now - self._at.get(conversation_key, -TYPING_LASTS) < TYPING_LASTS:
            return False
        if len(self._at) > 10_000:
            self._at = {k: t for k, t in self._at.items() if now - t < TYPING_LASTS}
        self._at[conversation_key] = now
        return True

    def shown_at(self, conversation_key: str) -> float | None:
        """`time.monotonic()` when typing was last shown in the conversation, while it still shows; else None."""
        at = self._at.get(conversation_key)
        return at if at is not None and time.monotonic() - at < TYPING_LASTS else None

    def keep(self, conversation_key: str, show: Callable[[], Awaitable[None]], *, every: float) -> None:
        """Show the sign now, where it is not showing already, and again every `every` seconds until the
        conversation's turn starts (`taken`) or the bot posts (`cleared`)."""
        if conversation_key in self._kept:
            return
        task = asyncio.create_task(self._keep(conversation_key, show, every))
        self._kept[conversation_key] = task
        task.add_done_callback(lambda done: self._forget(conversation_key, done))

    async def _keep(self, conversation_key: str, show: Callable[[], Awaitable[None]], every: float) -> None:
        until = time.monotonic() + KEPT_AT_MOST
        while time.monotonic() < until:
            if every > TYPING_LASTS or self.due(conversation_key):
                # Finished even when the turn starts meanwhile (`taken`): it counts as shown, so the turn's own
                # reply waits out TYPING_LASTS before showing it again; cut off mid-request, the chat showed nothing.
                showing = asyncio.ensure_future(_quietly(show()))
                self._once.add(showing)
                showing.add_done_callback(self._once.discard)
                await asyncio.shield(showing)
            await asyncio.sleep(every)

    def _forget(self, conversation_key: str, task: asyncio.Task[None]) -> None:
        if self._kept.get(conversation_key) is task:
            del self._kept[conversation_key]

    def taken(self, conversation_key: str) -> None:
        """The conversation's turn started: its reply shows the sign from now on."""
        task = self._kept.pop(conversation_key, None)
        if task is not None:
            task.cancel()

    def cleared(self, conversation_key: str) -> None:
        """The bot posted in the conversation, which clears its typing or status there."""
        self._at.pop(conversation_key, None)
        self.taken(conversation_key)


class Intake:
    def __init__(self, inbox: Inbox, adapters: Mapping[str, Parser], *, on_accepted: Callable[[], None],
                 answered_in: Callable[[str], Awaitable[bool]], metrics: GatewayMetrics | None = None,
                 waits: Callable[[], bool] = lambda: False, typing: TypingShown | None = None,
                 at_once: frozenset[str] = frozenset()) -> None:
        """`waits()`: a message accepted now may wait before its placeholder (`Worker.busy`); the chat is then shown
        typing at once, after the commit, without holding up the ack. `at_once`: the command words answered while a
        turn runs (`steps/commands/`), taken into their conversation's at-once lane."""
        self._at_once = at_once
        self._waits = waits
        self._typing = typing or TypingShown()
        self._inbox = inbox
        self._metrics = metrics or GatewayMetrics({})
        self._adapters = adapters
        self._on_accepted = on_accepted
        self._answered_in = answered_in

    async def deliver(self, bot_name: str, payload: Mapping[str, Any]) -> AckOutcome:
        """Returns once the event is durable (or deliberately dropped); only then may the platform be acked.

        Nothing here raises on platform data: a payload the parser cannot read, or whose identity the
        inbox cannot hold, is kept as rejected. Only the database failing raises, and then nothing is acked.
        """
        self._metrics.received(bot_name)
        outcome = await self._deliver(bot_name, payload)
        self._metrics.acked(bot_name, outcome)
        return outcome

    async def _deliver(self, bot_name: str, payload: Mapping[str, Any]) -> AckOutcome:
        adapter = self._adapters[bot_name]
        try:
            event = adapter.parse(payload)
            if event is not None:
                _check_storable(event)
        except MalformedPayload as exc:
            await self._reject(bot_name, _serialized(payload), str(exc))
            return "rejected"
        if isinstance(event, ApprovalClick):
            key = event.card.address.conversation_key  # decided in turn with the conversation the card belongs to
            # a Stop click must not wait behind the turn it stops, nor a 👍 / 👎 behind the next turn
            lane = event.verb == "stop" or event.verb in FEEDBACK_VERBS
        elif isinstance(event, Inbound) and await self._addressed(adapter, event):
            key = event.address.conversation_key
            # not behind the turn that runs: its own line, in order among its kind
            lane = command_word(event.text)[0] in self._at_once
        else:
            return "ignored"
        accepted = await self._inbox.accept(logical_id=event.logical_id, bot_name=bot_name,
                                            conversation_key=at_once(key) if lane else key, payload=payload,
                                            event=event)
        if not accepted:
            log.info("bot %r: duplicate delivery of %s dropped", bot_name, event.logical_id)
            return "duplicate"
        self._on_accepted()
        if isinstance(event, Inbound):
            waits = self._waits()
            if waits:
                self._show_sign(adapter, event.address)
            if isinstance(adapter, Reacts) and adapter.reacts and (waits or not event.address.is_direct):
                self._typing.spawn(adapter.react(MessageRef(address=event.address, message_id=event.message_id),
                                                 SEEN))
        return "accepted"

    def _show_sign(self, adapter: Parser, address: ChatAddress) -> None:
        """The first sign a queued message was seen, kept up in the background until its turn starts: the ack does
        not wait for it. Slack's status line where the conversation has one, else typing."""
        key = address.conversation_key
        if isinstance(adapter, ShowsStatus) and adapter.shows_status(address):
            self._typing.keep(key, partial(adapter.set_status, address, WORKING), every=adapter.status_lasts)
        elif isinstance(adapter, ShowsTyping):
            self._typing.keep(key, partial(adapter.show_typing, address), every=TYPING_LASTS)

    async def reject(self, bot_name: str, body: bytes, reason: str) -> None:
        """Keep an authenticated body that cannot be read as rejected (capped, with its hash), so it can be acked."""
        self._metrics.received(bot_name)
        await self._reject(bot_name, body, reason)
        self._metrics.acked(bot_name, "rejected")

    async def _reject(self, bot_name: str, body: bytes, reason: str) -> None:
        log.error("bot %r received an unreadable payload, kept as rejected: %s", bot_name, reason)
        await self._inbox.reject(bot_name=bot_name, body=body, error=reason)

    async def _addressed(self, adapter: Parser, event: Inbound) -> bool:
        """Named, replied to, or a DM; or, where threads are followed, inside a thread the bot answered in."""
        if event.addressed is not None:
            return True
        thread = event.address.thread_id
        # A post that starts its own thread (Slack `ts`, Mattermost post id) cannot be inside one the bot
        # answered in: only replies cost a database look-up, not every post of a busy channel.
        if not isinstance(adapter, FollowsThreads) or thread is None or thread == event.message_id:
            return False
        return await self._answered_in(event.address.conversation_key)

    def for_bot(self, bot_name: str) -> Deliver:
        async def deliver(payload: Mapping[str, Any]) -> None:
            await self.deliver(bot_name, payload)
        return deliver


def command_word(text: str) -> tuple[str, str]:
    """A message read as a command is: its first word, lower case and without a leading `/`, and the rest; ("", "")
    for a message of no words. The one reading of intake's lanes, the command step and a running turn's steering."""
    words = text.strip().removeprefix("/").split(None, 1)
    return (words[0].lower(), words[1] if len(words) > 1 else "") if words else ("", "")


async def _quietly(action: Awaitable[None]) -> None:
    try:
        await action
    except Exception as exc:  # the typing indicator or status is a courtesy; its failure changes nothing
        log.debug("first sign failed: %s", exc)


def _check_storable(event: Inbound | ApprovalClick) -> None:
    """Raises `MalformedPayload` for an identity the inbox's key columns cannot hold."""
    address = event.card.address if isinstance(event, ApprovalClick) else event.address
    for key in (event.logical_id, at_once(address.conversation_key)):
        if len(key) > KEY_LIMIT or "\x00" in key:
            raise MalformedPayload(f"an id of {len(key)} characters, or with NUL, is not a platform's")


def _serialized(payload: Mapping[str, Any]) -> bytes:
    """The payload's bytes for its rejected record, however odd its values."""
    try:
        return json.dumps(payload, sort_keys=True, default=repr).encode()
    except (TypeError, ValueError, RecursionError):  # mixed key types, 5,000-digit ints, deep nesting
        return repr(sorted(map(str, payload))).encode()
