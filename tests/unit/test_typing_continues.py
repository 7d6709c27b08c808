"""Typing shown while a message queued is not sent again the moment its turn starts: only when it runs out."""

from __future__ import annotations

import asyncio
import time

from adapters.base import ChatAddress, MessageRef, PlatformLimits
from gateway.pipeline.intake import TypingShown
from gateway.pipeline.live_reply import TYPING_LASTS, LiveReply

ROOM = ChatAddress(bot_id="b", platform="telegram", channel_id="42", thread_id=None, is_direct=True)


class TypingChat:
    """A chat that shows typing and posts nothing idempotently, as Telegram: the first post waits for text."""

    limits = PlatformLimits(max_text=4096, max_edit_text=4096)

    def __init__(self) -> None:
        self.typed = asyncio.Event()

    async def send(self, address: ChatAddress, text: str) -> MessageRef:
        return MessageRef(address=address, message_id="1")

    async def edit(self, ref: MessageRef, text: str) -> None:
        return None

    async def show_typing(self, address: ChatAddress) -> None:
        self.typed.set()


async def typing_sent_at_start(typed_at: float | None, *, within: float) -> bool:
    chat = TypingChat()
    reply = LiveReply(chat, ROOM, typed_at=typed_at)
    await reply.start()
    try:
        async with asyncio.timeout(within):
            await chat.typed.wait()
        return True
    except TimeoutError:
        return False
    finally:
        await reply.cancel()


async def test_a_turn_shows_typing_at_once_when_none_shows() -> None:
    assert await typing_sent_at_start(None, within=30)


async def test_a_turn_whose_message_was_just_shown_typing_does_not_send_it_again_at_once() -> None:
    assert not await typing_sent_at_start(time.monotonic(), within=1)  # typing shows for four seconds


async def test_typing_under_way_when_the_turn_starts_is_finished_not_cut_off() -> None:
    """The turn counts it as showing and waits before typing again; cut off mid-request, the chat showed nothing."""
    shown = TypingShown()
    arrived, release = asyncio.Event(), asyncio.Event()
    outcome: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def show() -> None:
        arrived.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            outcome.set_result("cut off")
            raise
        outcome.set_result("sent")

    shown.keep("c", show, every=TYPING_LASTS)
    await arrived.wait()
    shown.taken("c")  # the conversation's turn starts while the request is under way
    assert shown.shown_at("c") is not None
    release.set()
    assert await outcome == "sent"
