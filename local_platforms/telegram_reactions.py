"""Reactions in the local Bot API (`setMessageReaction`): a bot sets at most one reaction on a message, of the
emoji Telegram allows; an empty list takes it away. The server keeps what each message shows now and every call in
order, so a test sees a reaction appear and go."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

ALLOWED = frozenset("👍👎❤🔥🥰👏😁🤔🤯😱🤬😢🎉🤩🤮💩🙏👌🕊🤡🥱🥴😍🐳🌚🌭💯🤣⚡🍌🏆💔🤨😐"
                    "🍓🍾💋🖕😈😴😭🤓👻👀🎃🙈😇😨🤝✍🤗🫡🎅🎄☃💅🤪🗿🆒💘🙉🦄😘💊🙊😎👾🤷😡")
"""Single-character emoji of https://core.telegram.org/bots/api#reactiontypeemoji (the few of two characters,
❤️ and the like, are left out: nothing here sends them)."""


class ReactionInvalid(ValueError):
    """What Telegram answers 400 `REACTION_INVALID` to."""


@dataclass(slots=True)
class Reactions:
    """The bot's reaction on each message, by (chat, message id), and every change in order."""

    showing: dict[tuple[int, int], str] = field(default_factory=dict[tuple[int, int], str])
    changes: list[tuple[int, int, str]] = field(default_factory=list[tuple[int, int, str]])
    """(chat, message id, emoji) of every call; "" where the reaction was taken away."""

    def set(self, chat_id: int, message_id: int, reaction: Any) -> None:
        """`reaction` as the Bot API takes it: a list of `ReactionTypeEmoji` (at most one for a bot), or nothing."""
        emoji = _emoji(reaction)
        if emoji:
            self.showing[(chat_id, message_id)] = emoji
        else:
            self.showing.pop((chat_id, message_id), None)
        self.changes.append((chat_id, message_id, emoji))

    def on(self, chat_id: int, message_id: int) -> str:
        """The emoji the bot's reaction shows on the message now, or ""."""
        return self.showing.get((chat_id, message_id), "")


def _emoji(reaction: Any) -> str:
    if reaction is None or reaction == []:
        return ""
    listed = cast(list[Any], reaction) if isinstance(reaction, list) else None
    if listed is None or len(listed) != 1:  # bots without Premium set one reaction at most
        raise ReactionInvalid("REACTION_INVALID")
    kind = cast(dict[str, Any], listed[0]) if isinstance(listed[0], dict) else {}
    if kind.get("type") != "emoji" or kind.get("emoji") not in ALLOWED:
        raise ReactionInvalid("REACTION_INVALID")
    return str(kind["emoji"])
