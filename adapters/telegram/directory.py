"""What a Telegram bot can learn about the chat it is in: the chat itself and its administrators.

The Bot API gives a bot no directory of chats to search and no way to read messages that were not
sent to it (https://core.telegram.org/bots/api#available-methods), so `supports` leaves those out
and they are never offered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from telegram import Bot, ChatFullInfo, User
from telegram.constants import ChatMemberStatus, ChatType
from telegram.error import BadRequest, Forbidden

from adapters.base import CHANNEL_LOOKUPS, ChannelInfo, ChannelLookup, DirectoryRefused, HistoryItem, Speaker

T = TypeVar("T")
Call = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]
"""The adapter's Bot API runner, given the method name."""


class TelegramDirectory:
    supports: frozenset[ChannelLookup] = CHANNEL_LOOKUPS["telegram"]

    def __init__(self, bot: Bot, call: Call) -> None:
        self._bot = bot
        self._call = call
        """The adapter's Bot API runner, which waits out 429s."""

    async def channel_info(self, channel_id: str) -> ChannelInfo:
        chat: ChatFullInfo = await self._ask("getChat", lambda: self._bot.get_chat(channel_id))
        direct = chat.type == ChatType.PRIVATE
        count = 2 if direct else await self._ask("getChatMemberCount",
                                                 lambda: self._bot.get_chat_member_count(channel_id))
        name = chat.title or " ".join(p for p in (chat.first_name, chat.last_name) if p) or str(chat.id)
        return ChannelInfo(channel_id=str(chat.id), name=name, purpose=chat.description or chat.bio or None,
                           member_count=count, is_direct=direct)

    async def channel_members(self, channel_id: str, *, limit: int) -> list[Speaker]:
        """A group's administrators; in a private chat, the person the bot talks to."""
        chat: ChatFullInfo = await self._ask("getChat", lambda: self._bot.get_chat(channel_id))
        if chat.type == ChatType.PRIVATE:
            person = Speaker(platform="telegram", platform_user_id=str(chat.id), handle=chat.username,
                             display_name=" ".join(p for p in (chat.first_name, chat.last_name) if p))
            return [person][:limit]
        admins = await self._ask("getChatAdministrators", lambda: self._bot.get_chat_administrators(channel_id))
        return [_speaker(member.user) for member in admins][:limit]

    async def search_channels(self, query: str, *, limit: int) -> list[ChannelInfo]:
        """Not in `supports`: the Bot API has no directory of chats."""
        return []

    async def channel_history(self, channel_id: str, *, limit: int) -> list[HistoryItem]:
        """Not in `supports`: the Bot API cannot read earlier messages of a chat."""
        return []

    async def is_member(self, channel_id: str, user_id: str) -> bool:
        """`getChatMember`: in the chat as its creator, an administrator, a member, or restricted but still in it."""
        try:
            member = await self._call("getChatMember", lambda: self._bot.get_chat_member(channel_id, int(user_id)))
        except BadRequest as exc:
            if "not found" in exc.message.lower():
                return False
            raise DirectoryRefused(exc.message) from None
        except Forbidden as exc:
            raise DirectoryRefused(exc.message) from None
        if member.status in (ChatMemberStatus.OWNER, ChatMemberStatus.ADMINISTRATOR, ChatMemberStatus.MEMBER):
            return True
        return bool(member.status == ChatMemberStatus.RESTRICTED and getattr(member, "is_member", False))

    async def _ask(self, method: str, request: Callable[[], Awaitable[T]]) -> T:
        try:
            return await self._call(method, request)
        except (BadRequest, Forbidden) as exc:
            raise DirectoryRefused(exc.message) from None


def _speaker(user: User) -> Speaker:
    return Speaker(platform="telegram", platform_user_id=str(user.id), handle=user.username,
                   display_name=user.full_name, is_bot=user.is_bot)
