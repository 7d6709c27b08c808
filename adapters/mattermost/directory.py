"""What a Mattermost bot can learn about the rooms it can see: all four lookups, through its own token.

The server answers only what the bot account may read: a channel it is not in answers 403, which
becomes `DirectoryRefused`. Search covers the public channels of the configured team, or of every
team the bot is in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from adapters.base import CHANNEL_LOOKUPS, ChannelInfo, ChannelLookup, DirectoryRefused, HistoryItem, Speaker
from adapters.mattermost.people import MattermostPeople
from adapters.mattermost.rest import MattermostApi, posts_of, status_of

T = TypeVar("T")


class MattermostDirectory:
    supports: frozenset[ChannelLookup] = CHANNEL_LOOKUPS["mattermost"]

    def __init__(self, api: MattermostApi, people: MattermostPeople, *, team: str | None = None) -> None:
        self._api = api
        self._people = people
        self._team = team

    async def channel_info(self, channel_id: str) -> ChannelInfo:
        channel = await self._ask(lambda: self._api.channel(channel_id))
        stats = await self._ask(lambda: self._api.channel_stats(channel_id))
        return _info(channel, member_count=stats.get("member_count"))

    async def channel_members(self, channel_id: str, *, limit: int) -> list[Speaker]:
        members = await self._ask(lambda: self._api.channel_members(channel_id, limit=limit))
        speakers = await self._people.speakers(str(m["user_id"]) for m in members[:limit])
        return list(speakers.values())

    async def search_channels(self, query: str, *, limit: int) -> list[ChannelInfo]:
        found: dict[str, ChannelInfo] = {}
        for team_id in await self._team_ids():
            for channel in await self._ask(lambda team=team_id: self._api.search_channels(team, query)):
                found.setdefault(str(channel["id"]), _info(channel))
        return list(found.values())[:limit]

    async def channel_history(self, channel_id: str, *, limit: int) -> list[HistoryItem]:
        answer = await self._ask(lambda: self._api.channel_posts(channel_id, limit=limit))
        posts = [p for p in posts_of(answer) if not p.get("type") and not p.get("delete_at")]
        posts = sorted(posts, key=lambda p: p.get("create_at") or 0)[-limit:]
        speakers = await self._people.speakers(str(p["user_id"]) for p in posts)
        return [HistoryItem(speaker=speakers[str(p["user_id"])], text=str(p.get("message") or ""),
                            message_id=str(p["id"])) for p in posts]

    async def is_member(self, channel_id: str, user_id: str) -> bool:
        """`GET /channels/{id}/members/{user_id}`: 404 is no member; 403 means the bot cannot see the channel."""
        try:
            await self._api.channel_member(channel_id, user_id)
        except Exception as exc:
            if status_of(exc) == 404:
                return False
            if status_of(exc) == 403:
                raise DirectoryRefused("mattermost refused the lookup (403): the bot account cannot see that "
                                       "channel") from None
            raise
        return True

    async def _team_ids(self) -> list[str]:
        teams = await self._api.my_teams()
        chosen = [t for t in teams if self._team in (t.get("name"), t.get("id"), t.get("display_name"))]
        return [str(t["id"]) for t in (chosen if self._team else teams)]

    async def _ask(self, request: Callable[[], Awaitable[T]]) -> T:
        try:
            return await request()
        except Exception as exc:
            if status_of(exc) in (403, 404):
                raise DirectoryRefused(f"mattermost refused the lookup ({status_of(exc)}): the bot account cannot "
                                       "see that channel; invite it there first") from None
            raise


def _info(channel: dict[str, Any], *, member_count: Any = None) -> ChannelInfo:
    direct = channel.get("type") == "D"
    return ChannelInfo(channel_id=str(channel["id"]),
                       name=str(channel.get("display_name") or channel.get("name") or channel["id"]),
                       purpose=channel.get("purpose") or None, topic=channel.get("header") or None,
                       member_count=member_count if isinstance(member_count, int) else None, is_direct=direct)
