"""The local Slack workspace, watched for `bench.ratio`: Socket Mode apps, and the envelope ack.

A bot's first sign is the thread's status line (`assistant.threads.setStatus`), its 👀 on the person's message
(`reactions.add`, the bench's bots set `reaction`), or its first post (a message, or a stream started); a streamed
reply's text is the message's so far plus what each call appends. A person's message reaches an app as one envelope
in a DM and as two (`message` and `app_mention`) in a channel that names it; every one of them counts as an ack, from
the moment the person wrote to the app's acknowledgement.
"""

from __future__ import annotations

import time
from typing import Any

from bench.models import TAG
from bench.watch import BenchBot, BenchChat, Pending, Record
from local_platforms.slack import LocalSlack, SlackApp

USERNAME = "helper"


class SlackWatch(LocalSlack):
    def __init__(self) -> None:
        super().__init__()
        self.record = Record()
        self.on_ack = self._acked
        self._seen = 0
        self._said: dict[str, float] = {}
        """Tag → when its person wrote it, for the envelopes' acks."""

    def populate(self, bots: int, chats: int) -> tuple[list[BenchBot], list[BenchChat]]:
        apps = [self.add_app(USERNAME if n == 0 else f"bot{n}", display_name="Helper") for n in range(bots)]
        made = [BenchBot(token=app.token, app_token=app.app_token, username=app.name, account=app) for app in apps]
        users = [self.add_user(f"user{n}", real_name=f"User {n}") for n in range(chats)]
        private = chats - chats // 2
        rooms = [self.open_dm(user, apps[0]) for user in users[:private]]
        rooms += [self.add_channel(f"team-{n}", members=[user, apps[0]]) for n, user in enumerate(users[private:])]
        return made, [BenchChat(key=room["id"], chat=room, speaker=user, private=room["is_im"])
                      for room, user in zip(rooms, users, strict=True)]

    async def say(self, bot: BenchBot, chat: BenchChat, tag: str) -> Pending:
        app: SlackApp = bot.account
        text = f"question {tag}" if chat.private else f"<@{app.bot_user_id}> question {tag}"
        pending = self.record.expect(chat.key, tag)
        self._said[tag] = pending.sent
        await self.user_says(chat.chat, chat.speaker, text)
        return pending

    async def until_connected(self, bots: list[BenchBot], within: float) -> None:
        await self.wait_for(lambda: all(bot.account.sockets for bot in bots), timeout=within)

    def shown(self, bot: BenchBot, chats: list[BenchChat]) -> list[str]:
        shown = []
        for chat in chats:
            for message in self.messages(chat.chat):
                threads = self.messages(chat.chat, thread_ts=message["ts"])
                shown += [m["text"] for m in [message, *threads] if m.get("user") == bot.account.bot_user_id]
        return shown

    async def _acked(self, app: SlackApp, envelope_id: str) -> None:
        event = app.unacked[envelope_id].get("payload", {}).get("event", {})
        found = TAG.search(str(event.get("text", ""))) if "bot_id" not in event else None
        if found and found.group(0) in self._said:
            self.record.acked(time.monotonic() - self._said[found.group(0)])

    async def _notify(self) -> None:
        calls = self.calls
        for call in calls[self._seen:]:
            self._note(call.method, call.params, call.at)
        self._seen = len(calls)
        await super()._notify()

    def _note(self, method: str, params: dict[str, Any], at: float) -> None:
        self.record.called(method)
        if method in ("chat.postMessage", "chat.update", "chat.startStream"):
            self.record.saw(str(params.get("channel", "")), at, post=method != "chat.update",
                            text=str(params.get("text") or params.get("markdown_text") or ""))
        elif method == "assistant.threads.setStatus" and params.get("status"):
            self.record.saw(str(params.get("channel_id", "")), at, post=False)
        elif method == "reactions.add":
            self.record.saw(str(params.get("channel", "")), at, post=False)
        elif method in ("chat.appendStream", "chat.stopStream"):  # noted as it arrives, before it is appended
            message = self.find(str(params.get("channel", "")), str(params.get("ts", "")))
            so_far = str(message["text"]) if message else ""
            self.record.saw("", at, post=False, text=so_far + str(params.get("markdown_text") or ""))
