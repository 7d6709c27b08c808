"""Message drafts in the local Bot API (`sendMessageDraft`, Bot API 9.3): a reply a bot is still writing, shown in a
private chat for 30 seconds unless sent again, and gone once the bot sends a message there. Nothing is stored in
the chat: a draft is not a message."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

DRAFT_LASTS = 30.0
"""Seconds a draft shows unless it is sent again."""


@dataclass(slots=True)
class Drafts:
    """The drafts showing in each private chat, by chat and draft id, with when each was last sent."""

    showing: dict[tuple[int, int], tuple[str, float]] = field(default_factory=dict[tuple[int, int], tuple[str, float]])
    shown: list[tuple[int, int, str]] = field(default_factory=list[tuple[int, int, str]])
    """Every draft ever sent, as (chat, draft id, text), in order."""

    def show(self, chat_id: int, draft_id: int, text: str) -> None:
        self.showing[(chat_id, draft_id)] = (text, time.monotonic())
        self.shown.append((chat_id, draft_id, text))

    def sent(self, chat_id: int) -> None:
        """The bot sent a message in the chat, which ends its drafts there."""
        for key in [key for key in self.showing if key[0] == chat_id]:
            del self.showing[key]

    def current(self, chat_id: int) -> list[str]:
        """The texts of the drafts showing in the chat now."""
        now = time.monotonic()
        return [text for (chat, _), (text, at) in self.showing.items() if chat == chat_id and now - at < DRAFT_LASTS]
