"""A local Mattermost server: REST API v4, the WebSocket event stream and outgoing webhooks.

It speaks the wire protocol a real server speaks, so mattermostdriver and the gateway's adapter work
against it unmodified: Bearer tokens (401 otherwise), JSON answers with exactly
`Content-Type: application/json` (mattermostdriver returns the raw response for anything else),
`posted` events whose `post` and `mentions` are JSON strings, and outgoing webhooks POSTed as JSON or
as a form; interactive dialogs opened with a button's trigger id, their submissions POSTed to the dialog's URL.
Callers play the people (`user_posts`, `click`, `submit_dialog`), the admin (`add_*`, `add_outgoing_webhook`) and
the network (`drop_connections`, `refuse_connections`, `fail_next`), and read what bots did
(`calls`, `posts`, `webhook_responses`).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web

from local_platforms.mattermost_files import MattermostFiles
from local_platforms.server import ChangeSignal, LocalPlatform, LocalServer, is_json_array, is_json_object

__all__ = ["ApiCall", "LocalMattermost", "OutgoingWebhook"]

JSON = dict[str, Any]
API = "/api/v4"
MAX_POST_RUNES = 16_383
TRIGGER_LASTS = 3.0
"""Seconds a button call's `trigger_id` opens a dialog for (the server's `InteractiveDialogTriggerTimeout`)."""
ROOM_MENTIONS = re.compile(r"(?<![\w.@-])@(channel|all|here)(?![\w-]|\.[\w-])", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiCall:
    """One REST request, recorded when it arrived (after authentication)."""

    route: str
    """The handler's name, e.g. ``create_post``, ``patch_post``, ``typing``."""
    path: str
    user_id: str
    body: Any
    query: dict[str, str]
    at: float


@dataclass(slots=True, kw_only=True)
class OutgoingWebhook:
    """An outgoing webhook as an admin configures it; ``token`` is what the bot's operator pastes."""

    id: str
    token: str
    team_id: str
    channel_id: str
    trigger_words: tuple[str, ...]
    trigger_when: int
    """0: the first word is a trigger word; 1: the first word starts with one."""
    callback_urls: list[str]
    content_type: str
    creator_id: str


class ApiError(Exception):
    def __init__(self, status: int, error_id: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error_id, self.message = status, error_id, message

    def to_json(self) -> JSON:
        return {"id": self.error_id, "message": self.message, "detailed_error": "", "request_id": _new_id(),
                "status_code": self.status}


@dataclass(slots=True, eq=False)
class _Connection:
    user_id: str
    socket: web.WebSocketResponse
    request: web.Request
    seq: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


Handler = Callable[[str, web.Request, Any], Awaitable[Any]]

PENDING_POST_ID_WINDOW = 30.0
"""Seconds the server remembers a `pending_post_id` (mattermost-server `PendingPostIDsCacheTTL`)."""


BUILT_IN_COMMANDS = frozenset({"away", "code", "collapse", "dnd", "echo", "expand", "groupmsg", "header", "help",
                               "invite", "join", "kick", "leave", "logout", "me", "msg", "mute", "offline", "online",
                               "purpose", "remove", "rename", "search", "settings", "shortcuts", "shrug", "status"})
"""The server's own slash commands: a custom command cannot take their trigger."""


class LocalMattermost(LocalPlatform):
    """An in-process Mattermost server on ``host:port`` (port 0: the OS picks one)."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, webhook_timeout: float = 10.0) -> None:
        self.url = ""
        """``http://host:port`` once started: the server URL a bot is configured with."""
        self.calls: list[ApiCall] = []
        self.webhook_responses: list[tuple[int, str]] = []
        """(HTTP status, body) of every outgoing webhook call; status 0 when no HTTP answer came."""
        self.action_responses: list[tuple[int, str]] = []
        """(HTTP status, body) of every button click sent to an integration URL."""
        self.ephemeral: list[tuple[str, JSON]] = []
        """(user id, post) of every ephemeral post, shown to that user only."""
        self.dialogs: list[JSON] = []
        """Interactive dialogs bots opened: the request (`trigger_id`, `url`, `dialog`), with the `user_id` and
        `channel_id` of the click whose trigger opened it."""
        self._triggers: dict[str, tuple[str, str, float]] = {}
        """Each button call's `trigger_id`: the person who clicked, the channel, and when."""
        self.sessions = 0
        """Event-stream connections authenticated so far."""
        self._webhook_timeout = webhook_timeout
        self._users: dict[str, JSON] = {}
        self._tokens: dict[str, str] = {}
        self._teams: dict[str, JSON] = {}
        self._team_members: dict[str, set[str]] = {}
        self._channels: dict[str, JSON] = {}
        self._channel_members: dict[str, set[str]] = {}
        self._posts: dict[str, JSON] = {}
        self._pending: dict[str, tuple[str, float]] = {}
        """`pending_post_id` → (the post created with it, when): a repeated create within the window returns it."""
        self._hooks: list[OutgoingWebhook] = []
        self.commands: list[JSON] = []
        """Custom slash commands created through `POST /commands`, with their tokens."""
        self.command_responses: list[tuple[int, str]] = []
        """(HTTP status, body) of every slash command call to an integration URL."""
        self._command_managers: set[str] | None = None
        """Who may create and list slash commands; None: everyone (`refuse_slash_commands` narrows it)."""
        self._connections: list[_Connection] = []
        self._failures: dict[str, list[tuple[int, dict[str, str]]]] = {}
        self._unanswered: set[str] = set()
        self._stopping = asyncio.Event()
        self._anonymous: set[str] = set()
        self._refusing = False
        self._last_time = 0
        self._changes = ChangeSignal()
        self._server = LocalServer(host, port)
        self.files = MattermostFiles(user_of=self._tokens.get, notify=self._changes.notify,
                                     member=lambda channel, user: user in self._channel_members.get(channel, ()))
        """Uploaded files with their bytes (`files.add` stores a person's, to name in `user_posts(file_ids=...)`)."""

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        for method, path, handler in self._routes():
            app.router.add_route(method, API + path, self._endpoint(handler))
        app.router.add_get(API + "/websocket", self._handle_websocket)
        self.files.routes(app, API)
        self.url = await self._server.start(app, client_timeout=self._webhook_timeout)

    async def stop(self) -> None:
        self._stopping.set()
        await self.drop_connections()
        await self._server.stop()

    # -- the world: people, teams, channels, webhooks ---------------------------------------

    def add_user(self, username: str, *, first_name: str = "", last_name: str = "", token: str | None = None,
                 is_bot: bool = False) -> JSON:
        """Create an account; with a ``token`` it can call the API. Returns its user JSON."""
        now = self._now()
        user: JSON = {"id": _new_id(), "username": username, "first_name": first_name, "last_name": last_name,
                "nickname": "", "email": f"{username}@example.org", "is_bot": is_bot,
                "roles": "system_user", "create_at": now, "update_at": now, "delete_at": 0}
        self._users[user["id"]] = user
        if token is not None:
            self._tokens[token] = user["id"]
        return copy.deepcopy(user)

    def add_bot(self, token: str, *, username: str, display_name: str = "Helper") -> JSON:
        """A bot account with an access token, as Integrations > Bot Accounts creates it."""
        return self.add_user(username, first_name=display_name, token=token, is_bot=True)

    def add_team(self, name: str, *, members: Iterable[JSON] = ()) -> JSON:
        team: JSON = {"id": _new_id(), "name": name, "display_name": name.title(), "type": "O",
                      "create_at": self._now()}
        self._teams[team["id"]] = team
        self._team_members[team["id"]] = {m["id"] for m in members}
        return copy.deepcopy(team)

    def add_channel(self, team: JSON, name: str, *, kind: str = "O", members: Iterable[JSON] = ()) -> JSON:
        """A public (``O``) or private (``P``) channel; its members join the team too."""
        channel = self._new_channel(team["id"], kind, name, name.replace("-", " ").title())
        self._channel_members[channel["id"]] = {m["id"] for m in members}
        self._team_members[team["id"]].update(self._channel_members[channel["id"]])
        return copy.deepcopy(channel)

    def direct_channel(self, a: JSON, b: JSON) -> JSON:
        """The direct-message channel of two people (``D``), created on first use."""
        name = "__".join(sorted((a["id"], b["id"])))
        existing = next((c for c in self._channels.values() if c["name"] == name), None)
        channel = existing or self._new_channel("", "D", name, "")
        self._channel_members[channel["id"]] = {a["id"], b["id"]}
        return copy.deepcopy(channel)

    def group_channel(self, members: Iterable[JSON]) -> JSON:
        """A group message (``G``) of three or more people."""
        ids = {m["id"] for m in members}
        channel = self._new_channel("", "G", _new_id(), ", ".join(sorted(self._users[i]["username"] for i in ids)))
        self._channel_members[channel["id"]] = ids
        return copy.deepcopy(channel)

    def add_member(self, channel: JSON, user: JSON) -> None:
        self._channel_members[channel["id"]].add(user["id"])
        if channel["team_id"]:
            self._team_members[channel["team_id"]].add(user["id"])

    def remove_member(self, channel: JSON, user: JSON) -> None:
        """``user`` leaves ``channel``: `GET /channels/{id}/members/{user_id}` answers 404 from now on."""
        self._channel_members[channel["id"]].discard(user["id"])

    def add_outgoing_webhook(self, team: JSON, *, callback_url: str, trigger_words: Iterable[str] = (),
                             channel: JSON | None = None, content_type: str = "application/x-www-form-urlencoded",
                             trigger_when: int = 0, token: str | None = None) -> OutgoingWebhook:
        """Fires for posts in public channels of ``team`` (or only ``channel``) that match a trigger word."""
        hook = OutgoingWebhook(id=_new_id(), token=token or _new_id(), team_id=team["id"],
                               channel_id=channel["id"] if channel else "", trigger_words=tuple(trigger_words),
                               trigger_when=trigger_when, callback_urls=[callback_url], content_type=content_type,
                               creator_id=_new_id())
        self._hooks.append(hook)
        return hook

    # -- what people do ----------------------------------------------------------------------

    async def user_posts(self, channel: JSON, user: JSON, message: str, *, root_id: str | None = None,
                         file_ids: list[str] | None = None) -> JSON:
        """Post as ``user``: broadcast to connected members, then fire matching outgoing webhooks."""
        post = self._create_post(user["id"], channel["id"], message, root_id or "", file_ids=file_ids)
        await self._publish(post)
        await self._fire_webhooks(post)
        return copy.deepcopy(post)

    async def deliver_webhook(self, hook: OutgoingWebhook, post: JSON, *, token: str | None = "",
                              trigger_word: str = "") -> list[tuple[int, str]]:
        """POST ``post`` to the hook's callback URLs as Mattermost does; ``token=None`` leaves it out,
        another string forges it. Returns each (status, body)."""
        user = self._users[post["user_id"]]
        channel = self._channels[post["channel_id"]]
        fields = {"token": hook.token if token == "" else token, "team_id": channel["team_id"],
                  "team_domain": self._teams[channel["team_id"]]["name"], "channel_id": channel["id"],
                  "channel_name": channel["name"], "timestamp": post["create_at"], "user_id": user["id"],
                  "user_name": user["username"], "post_id": post["id"], "text": post["message"],
                  "trigger_word": trigger_word, "file_ids": ""}
        fields = {k: v for k, v in fields.items() if v is not None}
        results = [await self._post_webhook(hook, url, fields, post) for url in hook.callback_urls]
        await self._notify()
        return results

    async def click(self, post: JSON, user: JSON, action_id: str, *, context: JSON | None = None) -> tuple[int, str]:
        """Press a button of ``post`` as ``user``: Mattermost POSTs the action's context to its integration URL.

        A ``context`` replaces the button's, as a forged call to the integration URL would.
        """
        stored = self._posts[post["id"]]
        actions = [a for attachment in stored["props"].get("attachments", []) for a in attachment.get("actions", [])]
        action = next(a for a in actions if a["id"] == action_id)
        channel = self._channels[stored["channel_id"]]
        team = self._teams.get(channel["team_id"], {})
        trigger = _new_id()
        self._triggers[trigger] = (user["id"], channel["id"], time.monotonic())
        body = {"user_id": user["id"], "user_name": user["username"], "channel_id": channel["id"],
                "channel_name": channel["name"], "team_id": channel["team_id"], "team_domain": team.get("name", ""),
                "post_id": stored["id"], "trigger_id": trigger, "type": "", "data_source": "",
                "context": action["integration"].get("context", {}) if context is None else context}
        return await self._post_back(action["integration"]["url"], body)

    async def submit_dialog(self, dialog: JSON, user: JSON, submission: JSON, *,
                            state: str | None = None) -> tuple[int, str]:
        """``user`` submits ``dialog`` (one of ``dialogs``) with ``submission`` (element name → value): the server
        POSTs a ``dialog_submission`` to the dialog's URL, naming the submitter from their session. A ``state``
        replaces the dialog's, as a forged call to the URL would."""
        opened = dialog["dialog"]
        channel = self._channels[dialog["channel_id"]]
        body = {"type": "dialog_submission", "url": dialog["url"], "callback_id": opened.get("callback_id", ""),
                "state": opened.get("state", "") if state is None else state, "user_id": user["id"],
                "channel_id": channel["id"], "team_id": channel["team_id"], "submission": submission,
                "cancelled": False}
        return await self._post_back(dialog["url"], body)

    async def _post_back(self, url: str, body: JSON) -> tuple[int, str]:
        """POST `body` to the integration's `url`, as the server does for a click or a submission; the answer (0 when
        unreachable) is recorded in `action_responses`."""
        assert self._server.session is not None, "the local Mattermost is not started"
        try:
            async with self._server.session.post(url, json=body) as response:
                result = (response.status, await response.text())
        except (aiohttp.ClientError, TimeoutError) as exc:
            result = (0, f"{type(exc).__name__}: {exc}")
        self.action_responses.append(result)
        await self._notify()
        return result

    # -- the network -------------------------------------------------------------------------

    async def send_frame(self, user: JSON, frame: str) -> None:
        """Send ``frame`` verbatim on every event stream of ``user``, as a broken server or proxy might."""
        for connection in [c for c in self._connections if c.user_id == user["id"]]:
            await connection.socket.send_str(frame)
        await self._notify()

    async def drop_connections(self, *, abrupt: bool = False) -> None:
        """End every event stream: a clean close (a server restart), or ``abrupt`` (a TCP reset)."""
        for connection in list(self._connections):
            if abrupt and connection.request.transport is not None:
                connection.request.transport.abort()
            else:
                await connection.socket.close(code=1001, message=b"server shutting down")
        await self._notify()

    def refuse_slash_commands(self, *, allowed: Iterable[JSON] = ()) -> None:
        """From now on only ``allowed`` users may create or list slash commands (a bot without the permission)."""
        self._command_managers = {user["id"] for user in allowed}

    async def user_runs_command(self, channel: JSON, user: JSON, command: str, text: str = "",
                                *, team: JSON | None = None) -> tuple[int, str]:
        """``user`` types ``command text`` (``/new``) in ``channel``, as the web client sends it: a custom command of
        the channel's team (or ``team``, for a DM) is POSTed to its URL with its token; an unknown one is refused
        there and then, as the client refuses it, and nothing is posted. Returns (status, body)."""
        team_id = channel["team_id"] or (team["id"] if team else "")
        found = next((c for c in self.commands if c["team_id"] == team_id and f"/{c['trigger']}" == command), None)
        if found is None:
            return 404, f"Command with a trigger of '{command}' not found."
        fields = {"channel_id": channel["id"], "channel_name": channel["name"], "command": command,
                  "response_url": f"{self.url}/hooks/commands/{_new_id()}", "team_domain": self._teams[team_id]["name"],
                  "team_id": team_id, "text": text, "token": found["token"], "trigger_id": _new_id(),
                  "user_id": user["id"], "user_name": user["username"]}
        assert self._server.session is not None, "the local Mattermost is not started"
        try:
            async with self._server.session.post(found["url"], data=urlencode(fields), headers={
                    "Content-Type": "application/x-www-form-urlencoded",
                    "Authorization": f"Token {found['token']}"}) as response:
                result = (response.status, await response.text())
        except (aiohttp.ClientError, TimeoutError) as exc:
            result = (0, f"{type(exc).__name__}: {exc}")
        self.command_responses.append(result)
        await self._notify()
        return result

    def refuse_connections(self, refuse: bool = True) -> None:
        """While refusing, the event stream answers 503 (the server is down); REST keeps working."""
        self._refusing = refuse

    def fail_next(self, route: str, status: int, *, times: int = 1, headers: dict[str, str] | None = None) -> None:
        """The next ``times`` calls to ``route`` (a handler name such as ``create_post``) answer ``status``."""
        self._failures.setdefault(route, []).extend([(status, headers or {})] * times)

    def answer_never(self, route: str) -> None:
        """The next call to ``route`` is carried out, but its answer never comes: the caller dies waiting, as a
        process killed between making a post and recording its id would."""
        self._unanswered.add(route)

    def hide_user_id(self, user: JSON) -> None:
        """``GET /users/me`` answers without the ``id`` of ``user``."""
        self._anonymous.add(user["id"])

    # -- what happened -----------------------------------------------------------------------

    def connected(self, user: JSON) -> int:
        """How many authenticated event streams ``user`` holds now."""
        return sum(1 for c in self._connections if c.user_id == user["id"])

    def posts(self, channel: JSON, *, user: JSON | None = None, thread: str | None = None) -> list[JSON]:
        """Posts of a channel in order, optionally only ``user``'s or only one thread's (root included)."""
        return [copy.deepcopy(p) for p in self._posts.values() if p["channel_id"] == channel["id"]
                and (user is None or p["user_id"] == user["id"])
                and (thread is None or thread in (p["id"], p["root_id"]))]

    def button_context(self, post: JSON, action_id: str) -> JSON:
        """What the bot put in a button's ``integration.context`` (clients never see it)."""
        actions = [a for attachment in self._posts[post["id"]]["props"].get("attachments", [])
                   for a in attachment.get("actions", [])]
        return copy.deepcopy(next(a for a in actions if a["id"] == action_id)["integration"]["context"])

    def route_calls(self, route: str) -> list[ApiCall]:
        return [call for call in self.calls if call.route == route]

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        """Return once ``predicate()`` is true, re-checked after every call, post and connection change.

        Raises:
            TimeoutError: it stayed false for ``timeout`` seconds.
        """
        await self._changes.wait_for(predicate, timeout=timeout)

    # -- REST --------------------------------------------------------------------------------

    def _routes(self) -> list[tuple[str, str, Handler]]:
        return [
            ("GET", "/users/me", self.users_me), ("POST", "/users/ids", self.users_ids),
            ("GET", "/users/{user_id}/teams", self.user_teams),
            ("GET", "/users/{user_id}/teams/{team_id}/channels", self.user_channels),
            ("POST", "/users/{user_id}/typing", self.typing),
            ("GET", "/teams/name/{name}", self.team_by_name),
            ("POST", "/teams/{team_id}/channels/search", self.search_channels),
            ("POST", "/posts", self.create_post), ("GET", "/posts/{post_id}", self.get_post),
            ("POST", "/posts/ephemeral", self.ephemeral_post), ("PUT", "/posts/{post_id}", self.update_post),
            ("PUT", "/posts/{post_id}/patch", self.patch_post), ("GET", "/posts/{post_id}/thread", self.get_thread),
            ("GET", "/channels/{channel_id}", self.get_channel),
            ("GET", "/channels/{channel_id}/members", self.channel_members),
            ("GET", "/channels/{channel_id}/members/{user_id}", self.channel_member),
            ("GET", "/channels/{channel_id}/stats", self.channel_stats),
            ("GET", "/channels/{channel_id}/posts", self.channel_posts),
            ("POST", "/actions/dialogs/open", self.open_dialog),
            ("POST", "/commands", self.create_command), ("GET", "/commands", self.list_commands),
        ]

    def _endpoint(self, handler: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
        route = handler.__name__

        async def endpoint(request: web.Request) -> web.Response:
            token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            user_id = self._tokens.get(token)
            if user_id is None:
                error = ApiError(401, "api.context.session_expired.app_error",
                                 "Invalid or expired session, please login again.")
                return _json(error.to_json(), error.status)
            raw = await request.read()
            body = json.loads(raw) if raw.strip() else None
            self.calls.append(ApiCall(route=route, path=request.path, user_id=user_id, body=body,
                                      query=dict(request.query), at=time.monotonic()))
            await self._notify()
            if self._failures.get(route):
                status, headers = self._failures[route].pop(0)
                return _json(ApiError(status, "local.injected", "Injected failure.").to_json(), status, headers)
            try:
                result = await handler(user_id, request, body)
            except ApiError as error:
                return _json(error.to_json(), error.status)
            finally:
                await self._notify()
            if route in self._unanswered:
                self._unanswered.discard(route)
                await self._stopping.wait()
            return _json(result, 201 if route == "create_post" else 200)
        return endpoint

    async def users_me(self, user_id: str, request: web.Request, body: Any) -> JSON:
        user = copy.deepcopy(self._users[user_id])
        if user_id in self._anonymous:
            del user["id"]
        return user

    async def users_ids(self, user_id: str, request: web.Request, body: Any) -> list[JSON]:
        if not is_json_array(body):
            raise ApiError(400, "api.context.invalid_body_param.app_error",
                           "Invalid or missing user_ids in request body.")
        return [copy.deepcopy(self._users[i]) for i in body if i in self._users]

    async def user_teams(self, user_id: str, request: web.Request, body: Any) -> list[JSON]:
        self._require_self(user_id, request)
        return [copy.deepcopy(t) for t in self._teams.values() if user_id in self._team_members[t["id"]]]

    async def user_channels(self, user_id: str, request: web.Request, body: Any) -> list[JSON]:
        self._require_self(user_id, request)
        team_id = request.match_info["team_id"]
        if user_id not in self._team_members.get(team_id, set()):
            raise ApiError(403, "api.context.permissions.app_error", "You do not have the appropriate permissions.")
        return [copy.deepcopy(c) for c in self._channels.values()
                if user_id in self._channel_members[c["id"]] and c["team_id"] in (team_id, "")]

    async def typing(self, user_id: str, request: web.Request, body: Any) -> JSON:
        self._require_self(user_id, request)
        channel = self._readable_channel(user_id, _or_empty(body).get("channel_id", ""))
        if user_id not in self._channel_members[channel["id"]]:
            raise ApiError(403, "api.context.permissions.app_error", "You do not have the appropriate permissions.")
        return {"status": "OK"}

    async def team_by_name(self, user_id: str, request: web.Request, body: Any) -> JSON:
        name = request.match_info["name"]
        team = next((t for t in self._teams.values() if t["name"] == name), None)
        if team is None or user_id not in self._team_members[team["id"]]:
            raise ApiError(404, "store.sql_team.get_by_name.app_error", "Unable to find the existing team.")
        return copy.deepcopy(team)

    async def search_channels(self, user_id: str, request: web.Request, body: Any) -> list[JSON]:
        team_id = request.match_info["team_id"]
        term = str(_or_empty(body).get("term", "")).lower()
        return [copy.deepcopy(c) for c in self._channels.values() if c["team_id"] == team_id and c["type"] == "O"
                and (term in c["name"].lower() or term in c["display_name"].lower())]

    async def create_post(self, user_id: str, request: web.Request, body: Any) -> JSON:
        """A `pending_post_id` seen in the last 30 seconds returns the post it made, as the real server's
        `deduplicateCreatePost` does; any other create is a new post."""
        body = body or {}
        pending = str(body.get("pending_post_id") or "")
        seen = self._pending.get(pending)
        if pending and seen is not None and time.monotonic() - seen[1] < PENDING_POST_ID_WINDOW:
            return copy.deepcopy(self._readable_post(user_id, seen[0]))
        post = self._create_post(user_id, str(body.get("channel_id", "")), str(body.get("message", "")),
                                 str(body.get("root_id") or ""), props=body.get("props"), file_ids=body.get("file_ids"))
        if pending:
            post["pending_post_id"] = pending
            self._pending[pending] = (post["id"], time.monotonic())
        await self._publish(post)
        return copy.deepcopy(post)

    async def open_dialog(self, user_id: str, request: web.Request, body: Any) -> JSON:
        """A dialog for the person whose button call gave ``trigger_id``, within 3 seconds of it."""
        body = _or_empty(body)
        dialog = body.get("dialog")
        if not is_json_object(dialog) or not dialog.get("title") or not body.get("url"):
            raise ApiError(400, "interactive_message.decode_trigger_id.missing_data",
                           "Invalid or missing dialog, url or trigger id.")
        issued = self._triggers.get(str(body.get("trigger_id", "")))
        if issued is None:
            raise ApiError(400, "interactive_message.decode_trigger_id.signature_decode_failed",
                           "Failed to decode trigger id.")
        if time.monotonic() - issued[2] > TRIGGER_LASTS:
            raise ApiError(400, "interactive_message.decode_trigger_id.expired", "Trigger ID has expired.")
        self.dialogs.append({"trigger_id": body["trigger_id"], "url": str(body["url"]), "dialog": copy.deepcopy(dialog),
                             "user_id": issued[0], "channel_id": issued[1]})
        return {"status": "OK"}

    async def ephemeral_post(self, user_id: str, request: web.Request, body: Any) -> JSON:
        body = body or {}
        post = dict(body.get("post") or {})
        self._readable_channel(user_id, str(post.get("channel_id", "")))
        shown = {**post, "id": _new_id(), "user_id": user_id, "create_at": self._now(), "type": "system_ephemeral"}
        self.ephemeral.append((str(body.get("user_id", "")), shown))
        return shown

    async def update_post(self, user_id: str, request: web.Request, body: Any) -> JSON:
        """The whole post: ``props`` not given are removed, as the real server does."""
        post = self._readable_post(user_id, request.match_info["post_id"])
        if post["user_id"] != user_id or _or_empty(body).get("id") != post["id"]:
            raise ApiError(400 if post["user_id"] == user_id else 403, "api.post.update_post.app_error",
                           "Invalid or missing post id, or not the author.")
        _check_message(str(body.get("message", "")))
        post["message"], post["props"] = str(body.get("message", "")), dict(body.get("props") or {})
        post["update_at"] = post["edit_at"] = self._now()
        return copy.deepcopy(post)

    async def get_post(self, user_id: str, request: web.Request, body: Any) -> JSON:
        return copy.deepcopy(self._readable_post(user_id, request.match_info["post_id"]))

    async def patch_post(self, user_id: str, request: web.Request, body: Any) -> JSON:
        post = self._readable_post(user_id, request.match_info["post_id"])
        if post["user_id"] != user_id:
            raise ApiError(403, "api.context.permissions.app_error", "You do not have the appropriate permissions.")
        if "message" in (body or {}):
            _check_message(str(body["message"]))
            post["message"] = str(body["message"])
        post["update_at"] = post["edit_at"] = self._now()
        return copy.deepcopy(post)

    async def get_thread(self, user_id: str, request: web.Request, body: Any) -> JSON:
        root = self._readable_post(user_id, request.match_info["post_id"])
        root = self._posts.get(root["root_id"], root)
        thread = [p for p in self._posts.values() if root["id"] in (p["id"], p["root_id"])]
        return {"order": [p["id"] for p in reversed(thread)], "posts": {p["id"]: copy.deepcopy(p) for p in thread},
                "next_post_id": "", "prev_post_id": ""}

    async def get_channel(self, user_id: str, request: web.Request, body: Any) -> JSON:
        return copy.deepcopy(self._readable_channel(user_id, request.match_info["channel_id"]))

    async def channel_members(self, user_id: str, request: web.Request, body: Any) -> list[JSON]:
        channel = self._readable_channel(user_id, request.match_info["channel_id"])
        return [_membership(channel["id"], member) for member in sorted(self._channel_members[channel["id"]])]

    async def channel_member(self, user_id: str, request: web.Request, body: Any) -> JSON:
        channel = self._readable_channel(user_id, request.match_info["channel_id"])
        wanted = user_id if request.match_info["user_id"] == "me" else request.match_info["user_id"]
        if wanted not in self._channel_members[channel["id"]]:
            raise ApiError(404, "app.channel.get_member.missing.app_error",
                           "No channel member found for that user ID and channel ID.")
        return _membership(channel["id"], wanted)

    async def channel_stats(self, user_id: str, request: web.Request, body: Any) -> JSON:
        channel = self._readable_channel(user_id, request.match_info["channel_id"])
        return {"channel_id": channel["id"], "member_count": len(self._channel_members[channel["id"]]),
                "guest_count": 0, "pinnedpost_count": 0, "files_count": 0}

    async def channel_posts(self, user_id: str, request: web.Request, body: Any) -> JSON:
        """``since`` (ms): every post changed after that time; otherwise ``page``/``per_page``, newest first."""
        channel = self._readable_channel(user_id, request.match_info["channel_id"])
        posts = [p for p in self._posts.values() if p["channel_id"] == channel["id"]]
        if "since" in request.query:
            since = int(request.query["since"])
            posts = [p for p in posts if p["update_at"] > since]
        else:
            page, per_page = int(request.query.get("page", 0)), int(request.query.get("per_page", 60))
            posts = list(reversed(posts))[page * per_page:(page + 1) * per_page]
        return {"order": [p["id"] for p in sorted(posts, key=lambda p: -p["create_at"])],
                "posts": {p["id"]: copy.deepcopy(p) for p in posts}, "next_post_id": "", "prev_post_id": ""}

    # -- the event stream --------------------------------------------------------------------

    async def create_command(self, user_id: str, request: web.Request, body: Any) -> JSON:
        self._may_manage_commands(user_id)
        fields = _or_empty(body)
        team_id, trigger = str(fields.get("team_id") or ""), str(fields.get("trigger") or "")
        if team_id not in self._teams or not trigger or not fields.get("url") or trigger.startswith("/"):
            raise ApiError(400, "model.command.is_valid.app_error", "Invalid command.")
        if trigger in BUILT_IN_COMMANDS or any(c["team_id"] == team_id and c["trigger"] == trigger
                                               for c in self.commands):
            raise ApiError(400, "api.command.duplicate_trigger.app_error", "This trigger word is already in use.")
        command = {**fields, "id": _new_id(), "token": _new_id(), "creator_id": user_id, "create_at": self._now()}
        self.commands.append(command)
        return copy.deepcopy(command)

    async def list_commands(self, user_id: str, request: web.Request, body: Any) -> list[JSON]:
        self._may_manage_commands(user_id)
        team_id = request.query.get("team_id", "")
        return [copy.deepcopy(c) for c in self.commands if c["team_id"] == team_id]

    def _may_manage_commands(self, user_id: str) -> None:
        if self._command_managers is not None and user_id not in self._command_managers:
            raise ApiError(403, "api.context.permissions.app_error", "You do not have the appropriate permissions.")

    async def _handle_websocket(self, request: web.Request) -> web.StreamResponse:
        if self._refusing:
            return web.Response(status=503, text="Service Unavailable")
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        user_id = await self._challenge(socket)
        if user_id is None:
            await socket.close()
            return socket
        connection = _Connection(user_id=user_id, socket=socket, request=request)
        self._connections.append(connection)
        self.sessions += 1
        await self._notify()
        try:
            async for message in socket:
                if message.type == aiohttp.WSMsgType.TEXT:
                    await self._answer_action(connection, message.data)
        finally:
            self._connections.remove(connection)
            await self._notify()
        return socket

    async def _challenge(self, socket: web.WebSocketResponse) -> str | None:
        """The first frame must be the authentication challenge with a known token."""
        try:
            frame = await socket.receive(timeout=10)
            challenge: Any = json.loads(frame.data) if frame.type == aiohttp.WSMsgType.TEXT else {}
        except (TimeoutError, json.JSONDecodeError):
            return None
        seq = challenge.get("seq", 1) if is_json_object(challenge) else 1
        token = _or_empty(challenge.get("data")).get("token") if is_json_object(challenge) else None
        user_id = self._tokens.get(token or "") if challenge.get("action") == "authentication_challenge" else None
        if user_id is None:
            await socket.send_json({"status": "FAIL", "seq_reply": seq, "error": {
                "id": "api.web_socket_router.not_authenticated.app_error", "message": "No websocket session."}})
            return None
        await socket.send_json({"status": "OK", "seq_reply": seq})
        await socket.send_json({"event": "hello", "data": {"server_version": "10.0.0.local",
                                                           "connection_id": _new_id()},
                                "broadcast": {"user_id": user_id, "channel_id": "", "team_id": ""}, "seq": 0})
        return user_id

    async def _answer_action(self, connection: _Connection, text: str) -> None:
        try:
            action = json.loads(text)
        except json.JSONDecodeError:
            return
        reply: JSON = {"status": "OK", "seq_reply": action.get("seq")}
        if action.get("action") == "ping":
            reply["data"] = {"text": "pong"}
        await connection.socket.send_json(reply)

    async def _publish(self, post: JSON) -> None:
        """Send the `posted` event to every connected member of the post's channel."""
        channel = self._channels[post["channel_id"]]
        members = self._channel_members[channel["id"]]
        mentions = self._mentions(channel, post)
        sender = self._users.get(post["user_id"], {})
        data: JSON = {"channel_display_name": channel["display_name"], "channel_name": channel["name"],
                      "channel_type": channel["type"], "post": json.dumps(_as_clients_see_it(post)),
                      "sender_name": f"@{sender.get('username', 'webhook')}", "set_online": True,
                      "team_id": channel["team_id"]}
        if mentions:
            data["mentions"] = json.dumps(sorted(mentions))
        for connection in [c for c in self._connections if c.user_id in members]:
            event: JSON = {"event": "posted", "data": data, "seq": next(connection.seq),
                     "broadcast": {"omit_users": None, "user_id": "", "channel_id": channel["id"], "team_id": ""}}
            try:
                await connection.socket.send_json(event)
            except (ConnectionError, RuntimeError):
                continue  # the connection is closing; that member missed the event, as on a real server
        await self._notify()

    def _mentions(self, channel: JSON, post: JSON) -> set[str]:
        """As the server computes them: named members, the other side of a DM, everyone on @channel/@all/@here."""
        others = self._channel_members[channel["id"]] - {post["user_id"]}
        if channel["type"] == "D":
            return set(others)
        if ROOM_MENTIONS.search(post["message"]):
            return set(others)
        return {uid for uid in others if re.search(rf"(?<![\w.@-])@{re.escape(self._users[uid]['username'])}"
                                                   r"(?![\w-]|\.[\w-])", post["message"], re.IGNORECASE)}

    # -- outgoing webhooks -------------------------------------------------------------------

    async def _fire_webhooks(self, post: JSON) -> None:
        channel = self._channels[post["channel_id"]]
        if channel["type"] != "O" or self._users[post["user_id"]].get("is_bot"):
            return
        words = post["message"].split()
        first = words[0] if words else ""
        for hook in self._hooks:
            if hook.team_id != channel["team_id"] or hook.channel_id not in ("", channel["id"]):
                continue
            trigger = next((w for w in hook.trigger_words
                            if (first == w if hook.trigger_when == 0 else first.startswith(w))), None)
            if trigger is not None or (not hook.trigger_words and hook.channel_id):
                await self.deliver_webhook(hook, post, trigger_word=trigger or "")

    async def _post_webhook(self, hook: OutgoingWebhook, url: str, fields: JSON, post: JSON) -> tuple[int, str]:
        assert self._server.session is not None, "the local Mattermost is not started"
        if hook.content_type == "application/json":
            request = self._server.session.post(url, json=fields)
        else:
            form = {**fields, "timestamp": str(int(fields.get("timestamp", 0)) // 1000)}
            request = self._server.session.post(url, data=urlencode(form),
                                         headers={"Content-Type": "application/x-www-form-urlencoded"})
        try:
            async with request as response:
                result = (response.status, await response.text())
        except (aiohttp.ClientError, TimeoutError) as exc:
            result = (0, f"{type(exc).__name__}: {exc}")
        self.webhook_responses.append(result)
        await self._answer_webhook(hook, result, post)
        return result

    async def _answer_webhook(self, hook: OutgoingWebhook, result: tuple[int, str], post: JSON) -> None:
        """A 2xx answer with a JSON `text` is posted in the channel, as Mattermost does."""
        try:
            answer: Any = json.loads(result[1]) if 200 <= result[0] < 300 else {}
        except json.JSONDecodeError:
            return
        if is_json_object(answer) and isinstance(answer.get("text"), str) and answer["text"]:
            reply = self._store_post(hook.creator_id, post["channel_id"], answer["text"], "",
                                     props={"from_webhook": "true", "override_username": "webhook"})
            await self._publish(reply)

    # -- model -------------------------------------------------------------------------------

    def _create_post(self, user_id: str, channel_id: str, message: str, root_id: str,
                     props: Any = None, file_ids: Any = None) -> JSON:
        channel = self._channels.get(channel_id)
        if channel is None or user_id not in self._channel_members[channel_id]:
            raise ApiError(403, "api.context.permissions.app_error", "You do not have the appropriate permissions.")
        _check_message(message)
        if not message.strip() and not (is_json_object(props) and props.get("attachments")) and not file_ids:
            raise ApiError(400, "api.post.create_post.message.app_error", "Post must have a message or a file.")
        root = self._posts.get(root_id) if root_id else None
        if root_id and (root is None or root["channel_id"] != channel_id or root["root_id"]):
            raise ApiError(400, "api.post.create_post.root_id.app_error", "Invalid RootId parameter.")
        extra: JSON = dict(props) if is_json_object(props) else {}
        if self._users[user_id].get("is_bot"):
            extra["from_bot"] = "true"
        post = self._store_post(user_id, channel_id, message, root_id, props=extra)
        if file_ids:
            try:
                self.files.attach(post, [str(file_id) for file_id in file_ids], user_id)
            except LookupError:
                del self._posts[post["id"]]
                raise ApiError(400, "api.post.create_post.file_ids.app_error", "Invalid file ids.") from None
        return post

    def _store_post(self, user_id: str, channel_id: str, message: str, root_id: str, *, props: JSON) -> JSON:
        now = self._now()
        post: JSON = {"id": _new_id(), "create_at": now, "update_at": now, "edit_at": 0, "delete_at": 0,
                "is_pinned": False, "user_id": user_id, "channel_id": channel_id, "root_id": root_id,
                "original_id": "", "message": message, "type": "", "props": props, "hashtags": "",
                "pending_post_id": "", "reply_count": 0, "metadata": {}}
        self._posts[post["id"]] = post
        return post

    def _new_channel(self, team_id: str, kind: str, name: str, display_name: str) -> JSON:
        channel: JSON = {"id": _new_id(), "team_id": team_id, "type": kind, "name": name, "display_name": display_name,
                   "header": "", "purpose": "", "create_at": self._now(), "delete_at": 0, "creator_id": ""}
        self._channels[channel["id"]] = channel
        self._channel_members.setdefault(channel["id"], set())
        return channel

    def _readable_channel(self, user_id: str, channel_id: str) -> JSON:
        channel = self._channels.get(channel_id)
        if channel is None:
            raise ApiError(404, "app.channel.get.existing.app_error", "Unable to find the existing channel.")
        public_to_team = channel["type"] == "O" and user_id in self._team_members.get(channel["team_id"], set())
        if user_id not in self._channel_members[channel_id] and not public_to_team:
            raise ApiError(403, "api.context.permissions.app_error", "You do not have the appropriate permissions.")
        return channel

    def _readable_post(self, user_id: str, post_id: str) -> JSON:
        post = self._posts.get(post_id)
        if post is None:
            raise ApiError(404, "app.post.get.app_error", "Unable to get the post.")
        self._readable_channel(user_id, post["channel_id"])
        return post

    def _require_self(self, user_id: str, request: web.Request) -> None:
        if request.match_info["user_id"] not in ("me", user_id):
            raise ApiError(403, "api.context.permissions.app_error", "You do not have the appropriate permissions.")

    def _now(self) -> int:
        """Milliseconds, strictly increasing, so that `since` and ordering are exact."""
        self._last_time = max(self._last_time + 1, int(time.time() * 1000))
        return self._last_time

    async def _notify(self) -> None:
        self._changes.notify()


def _or_empty(body: Any) -> JSON:
    """A request body read as an object, `{}` when there is none (a body of another kind fails where it is read)."""
    return body or {}


def _as_clients_see_it(post: JSON) -> JSON:
    """Button `integration` (URL and context) is stripped from posts sent to clients."""
    shown = copy.deepcopy(post)
    props = shown.get("props")
    attachments: list[Any] = props.get("attachments", []) if is_json_object(props) else []
    for attachment in attachments:
        for action in attachment.get("actions", []):
            action.pop("integration", None)
    return shown


def _check_message(message: str) -> None:
    if len(message) > MAX_POST_RUNES:
        raise ApiError(400, "model.post.is_valid.message_length.app_error",
                       "Post Message property is longer than the maximum permitted length.")


def _membership(channel_id: str, user_id: str) -> JSON:
    return {"channel_id": channel_id, "user_id": user_id, "roles": "channel_user", "msg_count": 0,
            "mention_count": 0, "notify_props": {}, "last_viewed_at": 0, "last_update_at": 0}


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    # Exactly this content type: mattermostdriver hands back the raw response for `...; charset=utf-8`.
    return web.Response(body=json.dumps(body).encode(), status=status,
                        headers={"Content-Type": "application/json", **(headers or {})})


def _new_id() -> str:
    return uuid.uuid4().hex[:26]
