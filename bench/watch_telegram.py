"""The local Telegram server, watched for `bench.ratio`: the offset ack is the first getUpdates past an update."""

from __future__ import annotations

import uuid
from collections import deque
from typing import Any

from bench.watch import BenchBot, BenchChat, Pending, Record
from local_platforms.telegram import LocalTelegram

USERNAME = "bench_helper_bot"


class TelegramWatch(LocalTelegram):
    def __init__(self) -> None:
        super().__init__()
        self.record = Record()
        self._seen = 0
        self._polled: set[str] = set()
        self._unacked: deque[tuple[int, float]] = deque()

    def populate(self, bots: int, chats: int) -> tuple[list[BenchBot], list[BenchChat]]:
        made = []
        for n in range(bots):
            token = f"{700_000_000 + n}:{uuid.uuid4().hex}"
            username = USERNAME if n == 0 else f"bot{n}"
            self.add_bot(token, username=username, first_name="Helper")
            made.append(BenchBot(token=token, username=username, account=token))
        users = [self.add_user(5000 + n, f"User{n}", username=f"user{n}") for n in range(chats)]
        private = chats - chats // 2
        rooms = [self.private_chat(user) for user in users[:private]]
        rooms += [self.group(-100_000 - n, f"Team {n}", supergroup=True) for n in range(chats - private)]
        return made, [BenchChat(key=str(room["id"]), chat=room, speaker=user, private=room["type"] == "private")
                      for room, user in zip(rooms, users, strict=True)]

    async def say(self, bot: BenchBot, chat: BenchChat, tag: str) -> Pending:
        text = f"question {tag}" if chat.private else f"@{bot.username} question {tag}"
        pending = self.record.expect(chat.key, tag)
        await self.user_says(bot.token, chat.chat, chat.speaker, text)
        self._unacked.append((self._bots[bot.token].next_update_id - 1, pending.sent))
        return pending

    async def until_connected(self, bots: list[BenchBot], within: float) -> None:
        wanted = {bot.token for bot in bots}
        await self.wait_for(lambda: self._polled >= wanted, timeout=within)

    def shown(self, bot: BenchBot, chats: list[BenchChat]) -> list[str]:
        return [m.get("text", "") for chat in chats for m in self.bot_messages(chat.chat["id"])]

    async def _notify(self) -> None:
        calls = self.calls
        for call in calls[self._seen:]:
            self._note(call.token, call.method, call.params, call.at)
        self._seen = len(calls)
        await super()._notify()

    def _note(self, token: str, method: str, params: dict[str, Any], at: float) -> None:
        self.record.called(method)
        if method == "getUpdates":
            self._polled.add(token)
            offset = int(params.get("offset") or 0)
            while self._unacked and self._unacked[0][0] < offset:
                _, sent = self._unacked.popleft()
                self.record.acked(at - sent)
        elif method in ("sendMessage", "editMessageText", "sendChatAction", "sendMessageDraft"):
            text = str(params.get("text", "")) if method in ("sendMessage", "editMessageText") else ""
            self.record.saw(str(params.get("chat_id", "")), at, post=method == "sendMessage", text=text)
