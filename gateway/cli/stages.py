"""The demo's three stages: each platform's local server with Alice, Bob, a DM and a team room.

A stage knows how its platform says things (a mention, a card's Approve button, a thread) so the
demo's one script (`gateway.cli.demo`) reads the same on every platform.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any, Literal, Protocol

from gateway.sandbox.mattermost import MattermostSandbox
from gateway.sandbox.slack import SlackSandbox
from gateway.sandbox.telegram import TelegramSandbox

DemoPlatform = Literal["telegram", "slack", "mattermost"]
Room = Literal["dm", "team"]
Person = Literal["alice", "bob"]
JSON = dict[str, Any]
PLACEHOLDER = "…"


class Stage(Protocol):
    """A platform's local server, peopled for the demo; `async with` starts and stops it."""

    platform: DemoPlatform
    secrets: dict[str, str]

    @property
    def url(self) -> str: ...

    async def __aenter__(self) -> Stage: ...
    async def __aexit__(self, *_: object) -> None: ...
    def bot_spec(self) -> JSON: ...
    def server_spec(self) -> JSON: ...
    def ready(self) -> bool: ...
    def mention(self) -> str: ...
    async def says(self, room: Room, person: Person, text: str) -> None: ...
    def answers(self, room: Room) -> list[str]: ...
    def card_buttons(self, room: Room) -> list[str] | None: ...
    async def approve(self, room: Room, person: Person) -> None: ...
    def transcript(self, room: Room) -> list[tuple[str, str]]: ...
    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float) -> None: ...  # noqa: ASYNC109


def build_stage(platform: DemoPlatform) -> Stage:
    stages: dict[DemoPlatform, Callable[[], Stage]] = {
        "telegram": TelegramStage, "slack": SlackStage, "mattermost": MattermostStage}
    return stages[platform]()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class TelegramStage:
    platform: DemoPlatform = "telegram"
    TOKEN = "700000001:demo-token-for-the-local-telegram-server"

    def __init__(self) -> None:
        self.sandbox = TelegramSandbox()
        self.secrets = {"DEMO_BOT_TOKEN": self.TOKEN}

    async def __aenter__(self) -> TelegramStage:
        await self.sandbox.__aenter__()
        self.me = self.sandbox.add_bot(self.TOKEN, username="demo_helper_bot", first_name="Helper")
        self.people = {"alice": self.sandbox.add_user(1001, "Alice", username="alice"),
                       "bob": self.sandbox.add_user(1002, "Bob", username="bob")}
        self.rooms = {"dm": self.sandbox.private_chat(self.people["alice"]),
                      "team": self.sandbox.group(-1002001, "Team", supergroup=True)}
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.sandbox.__aexit__(None, None, None)

    @property
    def url(self) -> str:
        return self.sandbox.url

    def bot_spec(self) -> JSON:
        return {"platform": "telegram", "token": "${DEMO_BOT_TOKEN}", "api_base_url": self.sandbox.url,
                "transport": "polling"}

    def server_spec(self) -> JSON:
        return {"host": "127.0.0.1", "port": 0}

    def ready(self) -> bool:
        return True  # long polling: the updates wait on the server until the bot asks

    def mention(self) -> str:
        return "@demo_helper_bot"

    async def says(self, room: Room, person: Person, text: str) -> None:
        await self.sandbox.user_says(self.TOKEN, self.rooms[room], self.people[person], text)

    def answers(self, room: Room) -> list[str]:
        return [m.get("text", "") for m in self.sandbox.messages(self.rooms[room]["id"])
                if m["from"]["id"] == self.me["id"]]

    def _card(self, room: Room) -> JSON | None:
        return next((m for m in self.sandbox.messages(self.rooms[room]["id"]) if m.get("reply_markup")), None)

    def card_buttons(self, room: Room) -> list[str] | None:
        card = self._card(room)
        return None if card is None else [b["text"] for row in card["reply_markup"]["inline_keyboard"] for b in row]

    async def approve(self, room: Room, person: Person) -> None:
        card = self._card(room) or {}
        [data] = [b["callback_data"] for row in card["reply_markup"]["inline_keyboard"] for b in row
                  if "Approve" in b["text"]]
        await self.sandbox.user_clicks(self.TOKEN, card, self.people[person], data)

    def transcript(self, room: Room) -> list[tuple[str, str]]:
        return self.sandbox.transcript(self.rooms[room]["id"])

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float) -> None:  # noqa: ASYNC109
        await self.sandbox.wait_for(predicate, timeout=timeout)


class SlackStage:
    platform: DemoPlatform = "slack"
    APPROVE = "approval:approve"

    def __init__(self) -> None:
        self.sandbox = SlackSandbox()

    async def __aenter__(self) -> SlackStage:
        await self.sandbox.__aenter__()
        self.app = self.sandbox.add_app("helper", display_name="Helper")
        self.secrets = {"DEMO_BOT_TOKEN": self.app.token, "DEMO_APP_TOKEN": self.app.app_token}
        self.people = {"alice": self.sandbox.add_user("alice", real_name="Alice", display_name="Alice"),
                       "bob": self.sandbox.add_user("bob", real_name="Bob", display_name="Bob")}
        self.rooms = {"dm": self.sandbox.open_dm(self.people["alice"], self.app),
                      "team": self.sandbox.add_channel("team", members=[*self.people.values(), self.app])}
        self.names = {p["id"]: p["real_name"] for p in self.people.values()} | {self.app.bot_user_id: "Helper"}
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.sandbox.__aexit__(None, None, None)

    @property
    def url(self) -> str:
        return self.sandbox.url

    def bot_spec(self) -> JSON:
        return {"platform": "slack", "token": "${DEMO_BOT_TOKEN}", "app_token": "${DEMO_APP_TOKEN}",
                "api_base_url": self.sandbox.url, "transport": "socket"}

    def server_spec(self) -> JSON:
        return {"host": "127.0.0.1", "port": 0}

    def ready(self) -> bool:
        return bool(self.app.sockets)  # Socket Mode: events reach the bot once it holds a socket

    def mention(self) -> str:
        return f"<@{self.app.bot_user_id}>"

    async def says(self, room: Room, person: Person, text: str) -> None:
        await self.sandbox.user_says(self.rooms[room], self.people[person], text)

    def _messages(self, room: Room) -> list[JSON]:
        """Every message of the room, each thread's replies right after its first message."""
        channel = self.rooms[room]
        return [reply for top in self.sandbox.messages(channel)
                for reply in [top, *self.sandbox.messages(channel, thread_ts=top["ts"])]]

    def answers(self, room: Room) -> list[str]:
        return [m["text"] for m in self._messages(room) if m.get("user") == self.app.bot_user_id]

    def _card(self, room: Room) -> JSON | None:
        return next((m for m in self._messages(room) if self.APPROVE in _slack_actions(m)), None)

    def card_buttons(self, room: Room) -> list[str] | None:
        card = self._card(room)
        return None if card is None else [e["text"]["text"] for block in card.get("blocks") or []
                                          for e in block.get("elements") or [] if "action_id" in e]

    async def approve(self, room: Room, person: Person) -> None:
        card = self._card(room) or {}
        await self.sandbox.user_clicks(self.app, card, self.people[person], self.APPROVE)

    def transcript(self, room: Room) -> list[tuple[str, str]]:
        return [(self.names.get(m.get("user") or "", "?"), m["text"]) for m in self._messages(room)]

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float) -> None:  # noqa: ASYNC109
        await self.sandbox.wait_for(predicate, timeout=timeout)


def _slack_actions(message: JSON) -> list[str]:
    return [e.get("action_id", "") for block in message.get("blocks") or [] for e in block.get("elements") or []]


class MattermostStage:
    platform: DemoPlatform = "mattermost"
    TOKEN = "demotokenforthelocalmattermost"

    def __init__(self) -> None:
        self.sandbox = MattermostSandbox()
        self.secrets = {"DEMO_BOT_TOKEN": self.TOKEN}
        self.port = _free_port()  # approval buttons carry the gateway's public URL, so it is chosen first

    async def __aenter__(self) -> MattermostStage:
        await self.sandbox.__aenter__()
        self.me = self.sandbox.add_bot(self.TOKEN, username="helper", display_name="Helper")
        self.people = {"alice": self.sandbox.add_user("alice", first_name="Alice"),
                       "bob": self.sandbox.add_user("bob", first_name="Bob")}
        team = self.sandbox.add_team("team", members=[self.me, *self.people.values()])
        self.rooms = {"dm": self.sandbox.direct_channel(self.people["alice"], self.me),
                      "team": self.sandbox.add_channel(team, "team", members=[self.me, *self.people.values()])}
        self.names = {p["id"]: p["first_name"] for p in [*self.people.values()]} | {self.me["id"]: "Helper"}
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.sandbox.__aexit__(None, None, None)

    @property
    def url(self) -> str:
        return self.sandbox.url

    def bot_spec(self) -> JSON:
        return {"platform": "mattermost", "token": "${DEMO_BOT_TOKEN}", "api_base_url": self.sandbox.url,
                "transport": "websocket", "team": "team"}

    def server_spec(self) -> JSON:
        return {"host": "127.0.0.1", "port": self.port, "public_url": f"http://127.0.0.1:{self.port}"}

    def ready(self) -> bool:
        return self.sandbox.connected(self.me) > 0

    def mention(self) -> str:
        return "@helper"

    async def says(self, room: Room, person: Person, text: str) -> None:
        await self.sandbox.user_posts(self.rooms[room], self.people[person], text)

    def answers(self, room: Room) -> list[str]:
        return [p["message"] for p in self.sandbox.posts(self.rooms[room], user=self.me)]

    def _card(self, room: Room) -> JSON | None:
        return next((p for p in self.sandbox.posts(self.rooms[room], user=self.me)
                     if any(a for att in p.get("props", {}).get("attachments", []) for a in att.get("actions", []))),
                    None)

    def card_buttons(self, room: Room) -> list[str] | None:
        card = self._card(room)
        return None if card is None else [a["name"] for att in card["props"]["attachments"] for a in att["actions"]]

    async def approve(self, room: Room, person: Person) -> None:
        await self.sandbox.click(self._card(room) or {}, self.people[person], "approve")

    def transcript(self, room: Room) -> list[tuple[str, str]]:
        return [(self.names.get(p["user_id"], "?"), p["message"]) for p in self.sandbox.posts(self.rooms[room])]

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float) -> None:  # noqa: ASYNC109
        await self.sandbox.wait_for(predicate, timeout=timeout)
