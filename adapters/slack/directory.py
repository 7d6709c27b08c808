"""What a Slack bot can look up about rooms: a channel, its members, channels by name, recent messages.

All four lookups go through the bot token (`conversations.info`, `.members`, `.list`, `.history`;
scopes `channels:read`, `groups:read`, `im:read`, `mpim:read` and the `*:history` ones). Room ids
are the adapter's `<team>:<channel>`; a room the bot is not in, or cannot see, is `DirectoryRefused`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from slack_sdk.errors import SlackApiError

from adapters.base import (
    CHANNEL_LOOKUPS,
    BotIdentity,
    ChannelInfo,
    ChannelLookup,
    DirectoryRefused,
    HistoryItem,
    Speaker,
)
from adapters.slack.markup import parse_slack_text
from adapters.slack.people import People, SlackPerson, mentioned_users
from adapters.slack.web import SlackAnswer, SlackWebApi, next_cursor, refusal_answer
from adapters.wire import objects_in

PERSON_SUBTYPES = frozenset({None, "file_share", "thread_broadcast", "me_message"})
"""Message subtypes that carry a person's words; edits, joins and other system messages are skipped."""
PAGE = 200
SEARCH_PAGES = 10
"""`conversations.list` pages read at most when searching, so a huge workspace cannot stall a turn."""
MEMBER_PAGES = 50
"""`conversations.members` pages read at most for one membership check (10,000 members)."""
LOOKUP_BUDGET = 5.0


class SlackDirectory:
    supports: frozenset[ChannelLookup] = CHANNEL_LOOKUPS["slack"]

    def __init__(self, client: SlackWebApi, people: People, *, team: Callable[[], str],
                 me: Callable[[], BotIdentity | None]) -> None:
        self._client = client
        self._people = people
        self._team = team
        """The workspace learned when the adapter opened."""
        self._me = me

    async def channel_info(self, channel_id: str) -> ChannelInfo:
        answer = await self._ask(self._client.conversations_info(channel=channel(channel_id), include_num_members=True))
        return self._info(answer["channel"])

    async def channel_members(self, channel_id: str, *, limit: int) -> list[Speaker]:
        user_ids: list[str] = []
        cursor: str | None = None
        while len(user_ids) < limit:
            page = await self._ask(self._client.conversations_members(channel=channel(channel_id),
                                                                      limit=min(PAGE, limit), cursor=cursor))
            members: list[str] = page.get("members") or []
            user_ids += members
            cursor = next_cursor(page)
            if not cursor:
                break
        people = await self._people.find(user_ids[:limit], budget=LOOKUP_BUDGET)
        return [speaker_of(user_id, people.get(user_id), {}, workspace=self._team()) for user_id in user_ids[:limit]]

    async def is_member(self, channel_id: str, user_id: str) -> bool:
        """Read `conversations.members` until the user turns up (Slack has no call for one membership)."""
        cursor: str | None = None
        for _ in range(MEMBER_PAGES):
            page = await self._ask(self._client.conversations_members(channel=channel(channel_id), limit=PAGE,
                                                                      cursor=cursor))
            if user_id in (page.get("members") or []):
                return True
            cursor = next_cursor(page)
            if not cursor:
                return False
        raise TimeoutError(f"{channel(channel_id)} has more than {MEMBER_PAGES * PAGE} members to read through")

    async def search_channels(self, query: str, *, limit: int) -> list[ChannelInfo]:
        """Channels whose name, topic or purpose contains `query` (any case), among those the bot can see."""
        wanted = query.strip().lower().lstrip("#")
        found: list[ChannelInfo] = []
        cursor: str | None = None
        for _ in range(SEARCH_PAGES):
            page = await self._ask(self._client.conversations_list(
                types="public_channel,private_channel", exclude_archived=True, limit=PAGE, cursor=cursor))
            for room in objects_in(page.get("channels")):
                info = self._info(room)
                if wanted in " ".join(filter(None, (info.name, info.topic, info.purpose))).lower():
                    found.append(info)
            cursor = next_cursor(page)
            if len(found) >= limit or not cursor:
                break
        return found[:limit]

    async def channel_history(self, channel_id: str, *, limit: int) -> list[HistoryItem]:
        page = await self._ask(self._client.conversations_history(channel=channel(channel_id), limit=min(limit, 999)))
        messages = [m for m in objects_in(page.get("messages")) if is_words(m)]
        return await self.history_items(list(reversed(messages[:limit])))

    async def history_items(self, messages: list[Mapping[str, Any]]) -> list[HistoryItem]:
        """Messages as the model reads them: speakers and mentions by name, the bot's own by its name."""
        user_ids = [str(m["user"]) for m in messages if m.get("user")]
        user_ids += [uid for m in messages for uid in mentioned_users(str(m.get("text") or ""))]
        people = await self._people.find(user_ids, budget=LOOKUP_BUDGET)
        names = {user_id: person.display_name for user_id, person in people.items()}
        return [HistoryItem(speaker=self._speaker(m, people), message_id=str(m.get("ts")),
                            text=parse_slack_text(str(m.get("text") or ""), names=names)) for m in messages]

    def _speaker(self, message: Mapping[str, Any], people: Mapping[str, SlackPerson]) -> Speaker:
        sender = str(message.get("user") or message.get("bot_id") or "unknown")
        me = self._me()
        if me is not None and sender == me.user_id:
            return Speaker(platform="slack", platform_user_id=sender, workspace=self._team(), handle=me.handle,
                           display_name=me.display_name, is_bot=True)
        return speaker_of(sender, people.get(sender), message, workspace=self._team())

    def _info(self, room: Mapping[str, Any]) -> ChannelInfo:
        direct = bool(room.get("is_im"))
        name = room.get("name") or ("direct message" if direct else str(room.get("id")))
        purpose: Mapping[str, Any] = room.get("purpose") or {}
        topic: Mapping[str, Any] = room.get("topic") or {}
        return ChannelInfo(channel_id=f"{self._team()}:{room.get('id')}", name=str(name),
                           purpose=purpose.get("value") or None, topic=topic.get("value") or None,
                           member_count=room.get("num_members"), is_direct=direct)

    async def _ask(self, request: Awaitable[SlackAnswer]) -> SlackAnswer:
        try:
            return await request
        except SlackApiError as exc:
            raise DirectoryRefused(f"slack refused the lookup: {refusal_answer(exc).get('error')}") from None


def channel(room_id: str) -> str:
    """The Slack channel id of a room `<team>:<channel>`."""
    return room_id.rpartition(":")[2]


def is_words(message: Mapping[str, Any]) -> bool:
    """A message someone wrote (a person or a bot), not a join, an edit or another system notice."""
    return message.get("subtype") in PERSON_SUBTYPES | {"bot_message"} and not message.get("hidden")


def speaker_of(sender: str, person: SlackPerson | None, message: Mapping[str, Any], *, workspace: str,
               is_bot: bool = False) -> Speaker:
    """Who wrote `message`: by the looked-up name, else the bot profile's, else the id."""
    profile: Mapping[str, Any] = message.get("bot_profile") or {}
    name = person.display_name if person else profile.get("name") or message.get("username") or sender
    bot = is_bot or bool(message.get("bot_id")) or bool(person and person.is_bot)
    return Speaker(platform="slack", platform_user_id=sender, workspace=workspace,
                   handle=person.handle if person else None, display_name=str(name), is_bot=bot)
