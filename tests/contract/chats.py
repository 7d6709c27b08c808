"""One bot and one person on each fake platform, driven the same way, for the adapter contract suite.

Each `Chat` knows how its platform lets a person speak, where the bot's answer lands (a Slack or
Mattermost thread under a channel mention, the chat itself on Telegram) and what a card looks like. The
gateway under test is the real one, configured as an operator would; everything is read off the wire.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from pydantic_ai.models import Model

from capabilities.registry import Registry
from gateway.server.app import Gateway
from tests.support import harness, mattermost_harness, slack_harness
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram

JSON = dict[str, Any]


class Chat(Protocol):
    """A platform with the bot, Alice, a direct chat of the two and a group they are both in."""

    platform: str
    bot_name: str
    speaker: str
    """How Alice's name reaches the model in a group (`[Alice] …`)."""
    dm: JSON
    group: JSON

    def running(self, database_url: str, *, model: Model, redis_url: str | None = None,
                registry: Registry | None = None,
                capabilities: list[dict[str, Any]] | None = None) -> AbstractAsyncContextManager[Gateway]: ...

    async def says(self, room: JSON, text: str) -> JSON:
        """Alice says `text`; in the group she mentions the bot. Returns her message as the platform stored it."""
        ...

    async def chatters(self, room: JSON, text: str) -> JSON:
        """Alice says `text` without addressing the bot."""
        ...

    async def another_bot_mentions(self, room: JSON, text: str) -> JSON: ...

    def answers(self, room: JSON, said: JSON) -> list[str]:
        """The bot's texts in the conversation `said` belongs to, oldest first."""
        ...

    def room_id(self, room: JSON) -> str: ...

    def message_id(self, said: JSON) -> str: ...

    def sends(self) -> int:
        """Messages the bot posted, counted on the wire."""
        ...

    def edits(self) -> int: ...

    def drafts(self) -> int:
        """Drafts the bot showed while it wrote (Telegram's private chats)."""
        ...

    def cards(self, room: JSON, said: JSON) -> list[JSON]: ...

    async def approve(self, card: JSON) -> None:
        """Alice presses the card's Approve button."""
        ...

    def is_closed_as_approved(self, card: JSON) -> bool:
        """The card, as the platform holds it now, says who approved it and has no buttons left."""
        ...

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float = 30.0) -> None: ...  # noqa: ASYNC109


class TelegramChat:
    platform = "telegram"

    def __init__(self, fake: FakeTelegram, *, transport: str = "polling") -> None:
        self.fake = fake
        self.bot = harness.TelegramBot(transport=transport).register(fake)
        self.bot_name = self.bot.name
        self.alice = fake.add_user(1001, "Alice", username="alice")
        self.speaker = "Alice"
        self.dm = fake.private_chat(self.alice)
        self.group = fake.group(-2001, "Team", supergroup=True)

    def running(self, database_url: str, *, model: Model, redis_url: str | None = None,
                registry: Registry | None = None,
                capabilities: list[dict[str, Any]] | None = None) -> AbstractAsyncContextManager[Gateway]:
        return harness.running_gateway(self.fake, [self.bot], database_url=database_url, redis_url=redis_url,
                                       model=model, registry=registry, capabilities=capabilities)

    async def says(self, room: JSON, text: str) -> JSON:
        prefix = "" if room["type"] == "private" else f"@{self.bot.username} "
        return await self.fake.user_says(self.bot.token, room, self.alice, prefix + text)

    async def chatters(self, room: JSON, text: str) -> JSON:
        return await self.fake.user_says(self.bot.token, room, self.alice, text)

    async def another_bot_mentions(self, room: JSON, text: str) -> JSON:
        other = self.fake.add_user(5005, "OtherBot", username="other_bot", is_bot=True)
        return await self.fake.user_says(self.bot.token, room, other, f"@{self.bot.username} {text}")

    def answers(self, room: JSON, said: JSON) -> list[str]:
        return [m["text"] for m in self.fake.bot_messages(room["id"]) if "text" in m]  # a photo has a caption

    def room_id(self, room: JSON) -> str:
        return str(room["id"])

    def message_id(self, said: JSON) -> str:
        return str(said["message_id"])

    def sends(self) -> int:
        return sum(c.method == "sendMessage" for c in self.fake.calls)

    def edits(self) -> int:
        return sum(c.method == "editMessageText" for c in self.fake.calls)

    def drafts(self) -> int:
        return sum(c.method == "sendMessageDraft" for c in self.fake.calls)

    def cards(self, room: JSON, said: JSON) -> list[JSON]:
        return [m for m in self.fake.bot_messages(room["id"]) if m.get("reply_markup")]

    async def approve(self, card: JSON) -> None:
        [data] = [b["callback_data"] for row in card["reply_markup"]["inline_keyboard"] for b in row
                  if "Approve" in b["text"]]
        await self.fake.user_clicks(self.bot.token, card, self.alice, data)

    def is_closed_as_approved(self, card: JSON) -> bool:
        [now] = [m for m in self.fake.bot_messages(card["chat"]["id"]) if m["message_id"] == card["message_id"]]
        return now["text"].startswith("Approved by Alice") and not now.get("reply_markup")

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        await self.fake.wait_for(predicate, timeout=timeout)


class SlackChat:
    platform = "slack"

    def __init__(self, fake: FakeSlack, *, transport: str = "socket") -> None:
        self.fake = fake
        self.bot = slack_harness.SlackBot(app=fake.add_app("helper"), transport=transport)  # type: ignore[arg-type]
        self.bot_name = self.bot.name
        self.alice = fake.add_user("alice", real_name="Alice")
        self.speaker = "Alice"
        self.dm = fake.open_dm(self.alice, self.bot.app)
        self.group = fake.add_channel("general", members=[self.alice, self.bot.app])

    def running(self, database_url: str, *, model: Model, redis_url: str | None = None,
                registry: Registry | None = None,
                capabilities: list[dict[str, Any]] | None = None) -> AbstractAsyncContextManager[Gateway]:
        return slack_harness.running_gateway(self.fake, [self.bot], database_url=database_url, redis_url=redis_url,
                                             model=model, registry=registry, capabilities=capabilities)

    async def says(self, room: JSON, text: str) -> JSON:
        prefix = "" if room is self.dm else f"{self.bot.mention} "
        return await self.fake.user_says(room, self.alice, prefix + text)

    async def chatters(self, room: JSON, text: str) -> JSON:
        return await self.fake.user_says(room, self.alice, text)

    async def another_bot_mentions(self, room: JSON, text: str) -> JSON:
        other = self.fake.add_user("otherbot", is_bot=True)
        return await self.fake.bot_says(room, other, f"{self.bot.mention} {text}")

    def answers(self, room: JSON, said: JSON) -> list[str]:
        thread = None if room is self.dm else said["ts"]
        return self.fake.texts(room, by=self.bot.app, thread_ts=thread)

    def room_id(self, room: JSON) -> str:
        return str(room["id"])

    def message_id(self, said: JSON) -> str:
        return str(said["ts"])

    def sends(self) -> int:
        return sum(c.method in ("chat.postMessage", "chat.startStream") for c in self.fake.calls)

    def edits(self) -> int:
        """`chat.update`, and what a stream appends to its message."""
        return sum(c.method in ("chat.update", "chat.appendStream", "chat.stopStream") for c in self.fake.calls)

    def drafts(self) -> int:
        return 0

    def cards(self, room: JSON, said: JSON) -> list[JSON]:
        return [m for m in self.fake.messages(room, thread_ts=said["ts"])
                if m.get("user") == self.bot.user_id and "Approval needed" in m["text"]]

    async def approve(self, card: JSON) -> None:
        await self.fake.user_clicks(self.bot.app, card, self.alice, "approval:approve")

    def is_closed_as_approved(self, card: JSON) -> bool:
        [now] = [m for m in self.fake.messages(self.group, thread_ts=card["thread_ts"]) if m["ts"] == card["ts"]]
        buttons = [e for block in now.get("blocks") or [] for e in block.get("elements") or []
                   if e.get("type") == "button"]
        return now["text"].startswith("*Approved* by Alice") and buttons == []

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        await self.fake.wait_for(predicate, timeout=timeout)


class MattermostChat:
    platform = "mattermost"

    def __init__(self, fake: FakeMattermost, *, webhook_token: str | None = None) -> None:
        self.fake = fake
        self.bot = mattermost_harness.MattermostBot(webhook_token=webhook_token).register(fake)
        self.bot_name = self.bot.name
        self.alice = fake.add_user("alice")
        self.speaker = "alice"
        self.team = fake.add_team("acme")
        self.dm = fake.direct_channel(self.alice, self.bot.user)
        self.group = fake.add_channel(self.team, "town-square", members=[self.bot.user, self.alice])

    def running(self, database_url: str, *, model: Model, redis_url: str | None = None,
                registry: Registry | None = None,
                capabilities: list[dict[str, Any]] | None = None) -> AbstractAsyncContextManager[Gateway]:
        return mattermost_harness.running_gateway(self.fake, [self.bot], database_url=database_url,
                                                  redis_url=redis_url, model=model, registry=registry,
                                                  capabilities=capabilities, public=True)

    async def says(self, room: JSON, text: str) -> JSON:
        prefix = "" if room is self.dm else f"@{self.bot.username} "
        return await self.fake.user_posts(room, self.alice, prefix + text)

    async def chatters(self, room: JSON, text: str) -> JSON:
        return await self.fake.user_posts(room, self.alice, text)

    async def another_bot_mentions(self, room: JSON, text: str) -> JSON:
        other = self.fake.add_bot(uuid.uuid4().hex[:26], username="otherbot")
        self.fake.add_member(room, other)
        return await self.fake.user_posts(room, other, f"@{self.bot.username} {text}")

    def answers(self, room: JSON, said: JSON) -> list[str]:
        root = "" if room is self.dm else said["id"]
        return [p["message"] for p in self.fake.posts(room, user=self.bot.user) if p["root_id"] == root
                and not p["props"].get("attachments")]

    def room_id(self, room: JSON) -> str:
        return str(room["id"])

    def message_id(self, said: JSON) -> str:
        return str(said["id"])

    def sends(self) -> int:
        return len(self.fake.route_calls("create_post"))

    def edits(self) -> int:  # a live reply is edited whole (`PUT /posts/{id}`), which also takes its Stop button away
        return len(self.fake.route_calls("patch_post")) + len(self.fake.route_calls("update_post"))

    def drafts(self) -> int:
        return 0

    def cards(self, room: JSON, said: JSON) -> list[JSON]:
        return [p for p in self.fake.posts(room, user=self.bot.user) if "Approval needed" in p["message"]]

    async def approve(self, card: JSON) -> None:
        await self.fake.click(card, self.alice, "approve")

    def is_closed_as_approved(self, card: JSON) -> bool:
        [now] = [p for p in self.fake.posts(self.group) if p["id"] == card["id"]]
        return now["message"].startswith("**Approved** by @alice") and not now["props"].get("attachments")

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        await self.fake.wait_for(predicate, timeout=timeout)


@asynccontextmanager
async def chat_on(platform: str) -> AsyncIterator[Chat]:
    """A fresh fake `platform` with its world."""
    if platform == "telegram":
        async with FakeTelegram() as telegram:
            yield TelegramChat(telegram)
    elif platform == "slack":
        async with FakeSlack() as slack:
            yield SlackChat(slack)
    else:
        async with FakeMattermost() as mattermost:
            yield MattermostChat(mattermost)
