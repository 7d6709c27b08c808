"""The local Mattermost server, watched for `bench.ratio`: WebSocket event streams, typing and posts.

Mattermost's event stream has no acknowledgement (a missed event is read back over REST), so there is no ack
figure here.
"""

from __future__ import annotations

import uuid
from typing import Any

from bench.watch import BenchBot, BenchChat, Pending, Record
from local_platforms.mattermost import LocalMattermost

USERNAME = "helper"


class MattermostWatch(LocalMattermost):
    def __init__(self) -> None:
        super().__init__()
        self.record = Record()
        self._seen = 0

    def populate(self, bots: int, chats: int) -> tuple[list[BenchBot], list[BenchChat]]:
        made = []
        for n in range(bots):
            token, username = uuid.uuid4().hex[:26], USERNAME if n == 0 else f"bot{n}"
            made.append(BenchBot(token=token, username=username, account=self.add_bot(token, username=username)))
        users = [self.add_user(f"user{n}", first_name=f"User{n}") for n in range(chats)]
        private = chats - chats // 2
        team = self.add_team("bench", members=[*(bot.account for bot in made), *users])
        rooms = [self.direct_channel(user, made[0].account) for user in users[:private]]
        rooms += [self.add_channel(team, f"team-{n}", members=[user, made[0].account])
                  for n, user in enumerate(users[private:])]
        return made, [BenchChat(key=room["id"], chat=room, speaker=user, private=room["type"] == "D")
                      for room, user in zip(rooms, users, strict=True)]

    async def say(self, bot: BenchBot, chat: BenchChat, tag: str) -> Pending:
        text = f"question {tag}" if chat.private else f"@{bot.username} question {tag}"
        pending = self.record.expect(chat.key, tag)
        await self.user_posts(chat.chat, chat.speaker, text)
        return pending

    async def until_connected(self, bots: list[BenchBot], within: float) -> None:
        await self.wait_for(lambda: all(self.connected(bot.account) for bot in bots), timeout=within)

    def shown(self, bot: BenchBot, chats: list[BenchChat]) -> list[str]:
        return [post["message"] for chat in chats for post in self.posts(chat.chat, user=bot.account)]

    async def _notify(self) -> None:
        calls = self.calls
        for call in calls[self._seen:]:
            self._note(call.route, call.body if isinstance(call.body, dict) else {}, call.at)
        self._seen = len(calls)
        await super()._notify()

    def _note(self, route: str, body: dict[str, Any], at: float) -> None:
        self.record.called(route)
        if route in ("create_post", "typing"):
            self.record.saw(str(body.get("channel_id", "")), at, post=route == "create_post",
                            text=str(body.get("message", "")))
        elif route in ("patch_post", "update_post"):
            self.record.saw("", at, post=False, text=str(body.get("message", "")))
