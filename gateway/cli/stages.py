"""The demo's three stages: each platform's local server with Alice, Bob, a DM and a team room.

A stage knows how its platform says things (a mention, a card's Approve button, a thread) so the
demo's one script (`gateway.cli.demo`) reads the same on every platform: what the gateway's config
needs is data (`StageSetup`), what the script reads is one `Transcript` per room.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from local_platforms.mattermost import LocalMattermost
from local_platforms.slack import LocalSlack
from local_platforms.telegram import LocalTelegram

DemoPlatform = Literal["telegram", "slack", "mattermost"]
Room = Literal["dm", "team"]
Person = Literal["alice", "bob"]
JSON = dict[str, Any]
PLACEHOLDER = "…"
BOT_NAME = "Helper"
"""The bot's display name on every stage: how a transcript tells its answers from what people said."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StageSetup:
    """What the gateway's config needs of a started stage."""

    platform: DemoPlatform
    url: str
    """Where the platform's local server listens."""
    secrets: Mapping[str, str]
    """The environment the bot spec's `${...}` references resolve in."""
    bot_spec: JSON
    """The platform's keys of the demo's `bots` entry."""
    server_spec: JSON
    """The config's `server` section."""
    mention: str
    """How a person addresses the bot in a room's text."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    """One message of a room as people see it now."""

    speaker: str
    text: str
    buttons: tuple[str, ...] = ()
    """The labels of a card's buttons; empty for a plain message."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    """A room's messages in order, threads' replies right after their first message."""

    lines: tuple[Line, ...]

    @property
    def answers(self) -> list[str]:
        """What the bot has said in the room."""
        return [line.text for line in self.lines if line.speaker == BOT_NAME]

    @property
    def card_buttons(self) -> tuple[str, ...] | None:
        """The buttons of the room's first approval card; None while it has none (a live reply's Stop button is not
        a card)."""
        return next((line.buttons for line in self.lines if any("Approve" in label for label in line.buttons)), None)


class Stage(Protocol):
    """A platform's local server, peopled for the demo: what the demo's script does there and reads back."""

    def start(self) -> AbstractAsyncContextManager[StageSetup]:
        """Starts the server and peoples it; stops it on exit."""
        ...

    def ready(self) -> bool:
        """The bot hears the rooms (where the platform pushes events, once the bot holds its connection)."""
        ...

    async def says(self, room: Room, person: Person, text: str) -> None: ...

    async def approve(self, room: Room, person: Person) -> None:
        """`person` taps Approve on the room's approval card."""
        ...

    def transcript(self, room: Room) -> Transcript: ...

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float) -> None:  # noqa: ASYNC109
        """Returns once `predicate()` is true, re-checked after every change on the server."""
        ...


def build_stage(platform: DemoPlatform) -> Stage:
    stages: dict[DemoPlatform, Callable[[], Stage]] = {
        "telegram": TelegramStage, "slack": SlackStage, "mattermost": MattermostStage}
    return stages[platform]()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class TelegramStage:
    TOKEN = "700000001:demo-token-for-the-local-telegram-server"

    def __init__(self) -> None:
        self.platform = LocalTelegram()

    @contextlib.asynccontextmanager
    async def start(self) -> AsyncIterator[StageSetup]:
        async with self.platform:
            self.me = self.platform.add_bot(self.TOKEN, username="demo_helper_bot", first_name=BOT_NAME)
            self.people = {"alice": self.platform.add_user(1001, "Alice", username="alice"),
                           "bob": self.platform.add_user(1002, "Bob", username="bob")}
            self.rooms = {"dm": self.platform.private_chat(self.people["alice"]),
                          "team": self.platform.group(-1002001, "Team", supergroup=True)}
            self.names = {p["id"]: p["first_name"] for p in self.people.values()} | {self.me["id"]: BOT_NAME}
            yield StageSetup(platform="telegram", url=self.platform.url, secrets={"DEMO_BOT_TOKEN": self.TOKEN},
                             bot_spec={"platform": "telegram", "token": "${DEMO_BOT_TOKEN}",
                                       "api_base_url": self.platform.url, "transport": "polling"},
                             server_spec={"host": "127.0.0.1", "port": 0}, mention="@demo_helper_bot")

    def ready(self) -> bool:
        return True  # long polling: the updates wait on the server until the bot asks

    async def says(self, room: Room, person: Person, text: str) -> None:
        await self.platform.user_says(self.TOKEN, self.rooms[room], self.people[person], text)

    def _card(self, room: Room) -> JSON | None:
        """The approval card: a live reply shows a Stop button too, so the card is the message that offers Approve."""
        return next((m for m in self.platform.messages(self.rooms[room]["id"])
                     if any("Approve" in b.get("text", "") for row in (m.get("reply_markup") or {}).get(
                         "inline_keyboard", []) for b in row)), None)

    async def approve(self, room: Room, person: Person) -> None:
        card = self._card(room) or {}
        [data] = [b["callback_data"] for row in card["reply_markup"]["inline_keyboard"] for b in row
                  if "Approve" in b["text"]]
        await self.platform.user_clicks(self.TOKEN, card, self.people[person], data)

    def transcript(self, room: Room) -> Transcript:
        return Transcript(lines=tuple(
            Line(speaker=self.names.get(m["from"]["id"], "?"), text=m.get("text", ""),
                 buttons=tuple(b["text"] for row in (m.get("reply_markup") or {}).get("inline_keyboard", [])
                               for b in row))
            for m in self.platform.messages(self.rooms[room]["id"])))

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float) -> None:  # noqa: ASYNC109
        await self.platform.wait_for(predicate, timeout=timeout)


class SlackStage:
    APPROVE = "approval:approve"

    def __init__(self) -> None:
        self.platform = LocalSlack()

    @contextlib.asynccontextmanager
    async def start(self) -> AsyncIterator[StageSetup]:
        async with self.platform:
            self.app = self.platform.add_app("helper", display_name=BOT_NAME)
            self.people = {"alice": self.platform.add_user("alice", real_name="Alice", display_name="Alice"),
                           "bob": self.platform.add_user("bob", real_name="Bob", display_name="Bob")}
            self.rooms = {"dm": self.platform.open_dm(self.people["alice"], self.app),
                          "team": self.platform.add_channel("team", members=[*self.people.values(), self.app])}
            self.names = {p["id"]: p["real_name"] for p in self.people.values()} | {self.app.bot_user_id: BOT_NAME}
            yield StageSetup(platform="slack", url=self.platform.url,
                             secrets={"DEMO_BOT_TOKEN": self.app.token, "DEMO_APP_TOKEN": self.app.app_token},
                             bot_spec={"platform": "slack", "token": "${DEMO_BOT_TOKEN}",
                                       "app_token": "${DEMO_APP_TOKEN}", "api_base_url": self.platform.url,
                                       "transport": "socket"},
                             server_spec={"host": "127.0.0.1", "port": 0}, mention=f"<@{self.app.bot_user_id}>")

    def ready(self) -> bool:
        return bool(self.app.sockets)  # Socket Mode: events reach the bot once it holds a socket

    async def says(self, room: Room, person: Person, text: str) -> None:
        await self.platform.user_says(self.rooms[room], self.people[person], text)

    def _messages(self, room: Room) -> list[JSON]:
        """Every message of the room, each thread's replies right after its first message."""
        channel = self.rooms[room]
        return [reply for top in self.platform.messages(channel)
                for reply in [top, *self.platform.messages(channel, thread_ts=top["ts"])]]

    async def approve(self, room: Room, person: Person) -> None:
        card = next((m for m in self._messages(room) if self.APPROVE in _slack_actions(m)), {})
        await self.platform.user_clicks(self.app, card, self.people[person], self.APPROVE)

    def transcript(self, room: Room) -> Transcript:
        return Transcript(lines=tuple(
            Line(speaker=self.names.get(m.get("user") or "", "?"), text=m["text"],
                 buttons=tuple(e["text"]["text"] for block in m.get("blocks") or []
                               for e in block.get("elements") or [] if "action_id" in e))
            for m in self._messages(room)))

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float) -> None:  # noqa: ASYNC109
        await self.platform.wait_for(predicate, timeout=timeout)


def _slack_actions(message: JSON) -> list[str]:
    return [e.get("action_id", "") for block in message.get("blocks") or [] for e in block.get("elements") or []]


class MattermostStage:
    TOKEN = "demotokenforthelocalmattermost"

    def __init__(self) -> None:
        self.platform = LocalMattermost()
        self.port = _free_port()  # approval buttons carry the gateway's public URL, so it is chosen first

    @contextlib.asynccontextmanager
    async def start(self) -> AsyncIterator[StageSetup]:
        async with self.platform:
            self.me = self.platform.add_bot(self.TOKEN, username="helper", display_name=BOT_NAME)
            self.people = {"alice": self.platform.add_user("alice", first_name="Alice"),
                           "bob": self.platform.add_user("bob", first_name="Bob")}
            team = self.platform.add_team("team", members=[self.me, *self.people.values()])
            self.rooms = {"dm": self.platform.direct_channel(self.people["alice"], self.me),
                          "team": self.platform.add_channel(team, "team", members=[self.me, *self.people.values()])}
            self.names = {p["id"]: p["first_name"] for p in self.people.values()} | {self.me["id"]: BOT_NAME}
            yield StageSetup(platform="mattermost", url=self.platform.url, secrets={"DEMO_BOT_TOKEN": self.TOKEN},
                             bot_spec={"platform": "mattermost", "token": "${DEMO_BOT_TOKEN}",
                                       "api_base_url": self.platform.url, "transport": "websocket", "team": "team"},
                             server_spec={"host": "127.0.0.1", "port": self.port,
                                          "public_url": f"http://127.0.0.1:{self.port}"},
                             mention="@helper")

    def ready(self) -> bool:
        return self.platform.connected(self.me) > 0

    async def says(self, room: Room, person: Person, text: str) -> None:
        await self.platform.user_posts(self.rooms[room], self.people[person], text)

    async def approve(self, room: Room, person: Person) -> None:
        card = next((p for p in self.platform.posts(self.rooms[room], user=self.me) if _mattermost_actions(p)), {})
        await self.platform.click(card, self.people[person], "approve")

    def transcript(self, room: Room) -> Transcript:
        return Transcript(lines=tuple(
            Line(speaker=self.names.get(p["user_id"], "?"), text=p["message"],
                 buttons=tuple(action["name"] for action in _mattermost_actions(p)))
            for p in self.platform.posts(self.rooms[room])))

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float) -> None:  # noqa: ASYNC109
        await self.platform.wait_for(predicate, timeout=timeout)


def _mattermost_actions(post: JSON) -> list[JSON]:
    return [action for attachment in post.get("props", {}).get("attachments", [])
            for action in attachment.get("actions", [])]
