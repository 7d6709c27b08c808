"""Who posted: Mattermost user ids turned into `Speaker`s, fetched in batches and remembered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from adapters.base import Speaker
from adapters.mattermost.rest import MattermostApi


class MattermostPeople:
    def __init__(self, api: MattermostApi, *, workspace: str) -> None:
        self._api = api
        self.workspace = workspace
        """The server's host: Mattermost user ids are unique per server only."""
        self._users: dict[str, dict[str, Any]] = {}

    async def users(self, user_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The user objects of `user_ids` that exist (`POST /users/ids` for those not seen before)."""
        wanted = set(user_ids)
        missing = sorted(wanted - self._users.keys())
        for user in await self._api.users(missing) if missing else []:
            self._users[str(user["id"])] = user
        return {uid: self._users[uid] for uid in wanted if uid in self._users}

    async def speakers(self, user_ids: Iterable[str]) -> dict[str, Speaker]:
        ids = list(user_ids)
        users = await self.users(ids)
        return {uid: self.speaker(uid, users.get(uid, {})) for uid in ids}

    def speaker(self, user_id: str, user: Mapping[str, Any]) -> Speaker:
        """Named by username, as the event stream's `sender_name` names people, so one person reads the same."""
        handle = str(user.get("username") or "") or None
        return Speaker(platform="mattermost", platform_user_id=user_id, workspace=self.workspace, handle=handle,
                       display_name=handle or display_name(user) or user_id, is_bot=bool(user.get("is_bot")))


def display_name(user: Mapping[str, Any]) -> str:
    full = " ".join(str(user.get(k) or "") for k in ("first_name", "last_name")).strip()
    return full or str(user.get("nickname") or "") or str(user.get("username") or "")
