"""Typing shown while a message queued is not sent again the moment its turn starts: only when it runs out."""

from __future__ import annotations

import asyncio
import time

from adapters.base import ChatAddress, MessageRef, PlatformLimits
from gateway.pipeline.live_reply import LiveReply

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
