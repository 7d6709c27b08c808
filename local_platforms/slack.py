"""A local Slack workspace: the Web API, Socket Mode, and signed Events API delivery.

The fake Slack of the test-suite, kept beside the product so a demo can use it too. Any Slack client
works against it unmodified, e.g. ``AsyncWebClient(token, base_url=f"{slack.url}/api/")``. Callers
play the people (``user_says``, ``bot_says``, ``user_clicks``) and read what apps did (``calls``,
``messages``, ``ephemeral``, ``views``), and submit the modals apps open (``user_submits``). It speaks the wire
protocol: Web API calls as query, form or JSON with
``Authorization: Bearer``, answered ``{"ok": true, ...}`` or ``{"ok": false, "error": ...}`` (HTTP 429
with ``Retry-After`` on demand); a Socket Mode WebSocket that says ``hello``, sends ``events_api`` and
``interactive`` envelopes and sends unacknowledged ones again on the next connection; and, for apps
with a request URL, ``v0``-signed Events API POSTs retried with ``X-Slack-Retry-Num`` when refused.
As on Slack, a post that mentions an app reaches it twice: as ``message`` and as ``app_mention``.
Files go both ways as on Slack (``files``, `local_platforms/slack_files.py`): the external upload flow of
``files_upload_v2``, and private downloads with the bot token (`files:read`, else a sign-in page).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import hmac
import itertools
import json
import re
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from urllib.parse import urlencode

import aiohttp
from aiohttp import web

from local_platforms.server import ChangeSignal, LocalPlatform, LocalServer, is_json_object, json_object
from local_platforms.slack_assistant import SlackAssistant, StreamRefused
from local_platforms.slack_files import FileRefused, SlackFiles

__all__ = ["ApiCall", "HttpDelivery", "LocalSlack", "SlackApp"]

JSON = dict[str, Any]
EventKind = Literal["events_api", "interactive", "slash_commands"]

TRIGGER_LASTS = 3.0
"""Seconds a click's ``trigger_id`` opens a modal for (Slack: 3), once."""
UPDATE_LIMIT = 4_000
"""Characters `chat.update` accepts; longer text is refused with `msg_too_long`."""
POST_LIMIT = 40_000
_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_SCOPES = {"files.getUploadURLExternal": "files:write", "files.completeUploadExternal": "files:write",
           "files.info": "files:read", "reactions.add": "reactions:write", "reactions.remove": "reactions:write"}
"""The scope a method needs beyond the default bot scopes; an app without it gets `missing_scope`."""
_APP_TOKEN_METHOD = "apps.connections.open"
"""The one method that takes the app-level token; every other one takes the bot token."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiCall:
    """One Web API request, recorded when it arrived."""

    method: str
    params: JSON
    token: str | None
    at: float
    """``time.monotonic()`` on arrival."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpDelivery:
    """One signed POST the local workspace made to an app's request URL, and the answer it got."""

    event_id: str | None
    retry_num: int
    status: int
    """HTTP status, or 0 when no answer came."""
    body: str
    at: float


@dataclass(slots=True, eq=False)
class SlackApp:
    """A Slack app with a bot user, installed in the local workspace."""

    name: str
    app_id: str
    bot_user_id: str
    bot_id: str
    token: str
    app_token: str
    signing_secret: str
    request_url: str | None = None
    """Where Events API requests go (and interactivity, unless it has its own); ``None``: Socket Mode."""
    interactivity_url: str | None = None
    commands_url: str | None = None
    """Where slash commands are POSTed over HTTP (the manifest's `url` of each); ``None``: the request URL."""
    connected_at: list[float] = field(default_factory=list[float])
    """``time.monotonic()`` of every Socket Mode connection."""
    acked: list[str] = field(default_factory=list[str])
    http: list[HttpDelivery] = field(default_factory=list[HttpDelivery])
    sockets: list[web.WebSocketResponse] = field(default_factory=list[web.WebSocketResponse], repr=False)
    unacked: dict[str, JSON] = field(default_factory=dict[str, JSON], repr=False)
    """Envelopes sent and not yet acknowledged, by id: sent again on the next connection."""
    waiting: list[JSON] = field(default_factory=list[JSON], repr=False)
    """Envelopes queued while no socket was open."""
    send_lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    scopes: set[str] = field(default_factory=lambda: {"files:read", "files:write", "reactions:write"})
    """The app's scopes beyond the default bot ones; take one away to see what an app without it gets."""


class ApiError(Exception):
    """A Web API error answer: ``{"ok": false, "error": ...}``."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


Handler = Callable[[SlackApp, JSON], Awaitable[JSON]]


class LocalSlack(LocalPlatform):
    """An in-process Slack on ``host:port`` (port 0: the OS picks one), with one workspace."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, team_id: str = "T0LOCAL",
                 retry_delays: tuple[float, ...] = (0.1, 0.2, 0.4)) -> None:
        self.url = ""
        """``http://host:port`` once started; clients use ``base_url=f"{url}/api/"``."""
        self.team_id = team_id
        self.calls: list[ApiCall] = []
        self.ephemeral: list[JSON] = []
        """Ephemeral messages, each seen only by its ``user``."""
        self.views: list[JSON] = []
        """Modals apps opened (``views.open``), as Slack answered them, each with the ``user`` it was opened for."""
        self._triggers: dict[str, tuple[str, float]] = {}
        """Each click's ``trigger_id``: the person who clicked, and when."""
        self.on_ack: Callable[[SlackApp, str], Awaitable[None]] | None = None
        """Awaited when an envelope is acknowledged, before the ack is recorded."""
        self._retry_delays = retry_delays
        self._apps: dict[str, SlackApp] = {}
        self._users: dict[str, JSON] = {}
        self._channels: dict[str, JSON] = {}
        self._messages: dict[str, list[JSON]] = {}
        self._events: dict[str, tuple[SlackApp, JSON]] = {}
        self._tickets: dict[str, SlackApp] = {}
        self._failures: dict[str, list[int]] = {}
        self._unanswered: set[str] = set()
        self._stopping = asyncio.Event()
        self._ids = itertools.count(1)
        self._epoch = int(time.time())
        self._changes = ChangeSignal()
        self._tasks: set[asyncio.Task[None]] = set()
        self._server = LocalServer(host, port)
        self.files = SlackFiles(base_url=lambda: self.url, reader=self._reads_files, changed=self._notify)
        """People's files (`files.add`) and what apps uploaded, with their bytes (`files.content`)."""
        self.assistant = SlackAssistant(workspace=self, changed=self._notify)
        """Status lines, titles, suggested prompts and streams (`local_platforms/slack_assistant.py`)."""
        self._methods = self._method_table()

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on ``host:port`` and set ``url``."""
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._handle_api)
        app.router.add_get("/link/", self._handle_socket)
        self.files.routes(app)
        self.url = await self._server.start(app, client_timeout=10)

    async def stop(self) -> None:
        """Close every socket and stop listening."""
        self._stopping.set()
        self.files.stopped = True
        self.files.released.set()
        for app in self._apps.values():
            for socket in list(app.sockets):
                await socket.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.stop()

    # -- the workspace: apps, people, channels -------------------------------------------------------

    def add_app(self, name: str, *, display_name: str | None = None, request_url: str | None = None) -> SlackApp:
        """Install an app with a bot user named ``name``; it has fresh tokens and a signing secret."""
        number = next(self._ids)
        app = SlackApp(name=name, app_id=f"A{number:08d}", bot_user_id=f"U{number:08d}B", bot_id=f"B{number:08d}",
                       token=f"xoxb-{number}-{secrets.token_hex(12)}",
                       app_token=f"xapp-1-A{number:08d}-{secrets.token_hex(12)}",
                       signing_secret=secrets.token_hex(16), request_url=request_url)
        self._apps[app.token] = app
        self._apps[app.app_token] = app
        profile = {"display_name": display_name or name, "real_name": display_name or name, "bot_id": app.bot_id}
        self._users[app.bot_user_id] = {"id": app.bot_user_id, "team_id": self.team_id, "name": name,
                                        "real_name": profile["real_name"], "is_bot": True, "profile": profile}
        return app

    def add_user(self, name: str, *, real_name: str | None = None, display_name: str = "",
                 is_bot: bool = False) -> JSON:
        """Add a person (or another app's bot user); returns the ``users.info`` user object."""
        user_id = f"U{next(self._ids):08d}"
        user = {"id": user_id, "team_id": self.team_id, "name": name, "real_name": real_name or name,
                "is_bot": is_bot, "profile": {"display_name": display_name, "real_name": real_name or name}}
        self._users[user_id] = user
        return copy.deepcopy(user)

    def add_channel(self, name: str, *, members: list[JSON | SlackApp], private: bool = False, purpose: str = "",
                    topic: str = "") -> JSON:
        """A public (or private) channel with these members; apps receive its messages only as members."""
        channel = {"id": f"C{next(self._ids):08d}", "name": name, "is_channel": not private, "is_group": private,
                   "is_im": False, "is_mpim": False, "is_private": private, "members": _member_ids(members),
                   "purpose": {"value": purpose}, "topic": {"value": topic}}
        return self._add_channel(channel)

    def open_dm(self, user: JSON, app: SlackApp) -> JSON:
        """The direct message channel between ``user`` and the app's bot."""
        channel = {"id": f"D{next(self._ids):08d}", "is_im": True, "is_channel": False, "is_group": False,
                   "is_mpim": False, "is_private": True, "user": user["id"],
                   "members": [user["id"], app.bot_user_id]}
        return self._add_channel(channel)

    def group_dm(self, users: list[JSON], app: SlackApp) -> JSON:
        """A multi-person direct message with these people and the app's bot."""
        names = "--".join(user["name"] for user in users)
        channel = {"id": f"G{next(self._ids):08d}", "name": f"mpdm-{names}-1", "is_mpim": True, "is_im": False,
                   "is_channel": False, "is_group": True, "is_private": True,
                   "members": [*(user["id"] for user in users), app.bot_user_id]}
        return self._add_channel(channel)

    def remove_member(self, channel: JSON, user: JSON) -> None:
        """``user`` leaves ``channel`` (or is removed from it): conversations.members no longer lists them."""
        members = self._channels[channel["id"]]["members"]
        if user["id"] in members:
            members.remove(user["id"])

    def _add_channel(self, channel: JSON) -> JSON:
        self._channels[channel["id"]] = channel
        self._messages[channel["id"]] = []
        return copy.deepcopy(channel)

    # -- what people do ----------------------------------------------------------------------------

    async def user_says(self, channel: JSON, user: JSON, text: str, *, thread_ts: str | None = None,
                        files: list[JSON] | None = None) -> JSON:
        """``user`` posts ``text``; member apps get ``message`` (and ``app_mention`` when named). Returns it."""
        extra: JSON = {"client_msg_id": str(uuid.uuid4())}
        if files:
            extra |= {"subtype": "file_share", "files": files}
        message = self._post(channel["id"], user["id"], text, thread_ts, extra)
        await self._announce(channel["id"], message)
        return copy.deepcopy(message)

    async def user_opens_assistant_thread(self, app: SlackApp, user: JSON) -> JSON:
        """``user`` opens the app's assistant view: a new thread in their DM with it, and an
        ``assistant_thread_started`` event. Returns the thread's first message."""
        dm = next((c for c in self._channels.values() if c.get("is_im") and c["members"] == [user["id"],
                                                                                            app.bot_user_id]), None)
        dm = dm or self.open_dm(user, app)
        root = self._post(dm["id"], app.bot_user_id, "", None, {"bot_id": app.bot_id, "app_id": app.app_id})
        event = {"type": "assistant_thread_started", "event_ts": self._next_ts(), "assistant_thread": {
            "user_id": user["id"], "channel_id": dm["id"], "thread_ts": root["ts"],
            "context": {"channel_id": None, "team_id": self.team_id, "enterprise_id": None}}}
        await self._emit(app, event)
        return copy.deepcopy(root)

    async def bot_says(self, channel: JSON, bot_user: JSON, text: str, *, thread_ts: str | None = None,
                       legacy: bool = False) -> JSON:
        """Another app's bot posts: with a bot user, or as a legacy ``bot_message`` without one."""
        bot_id = f"B{bot_user['id'][1:]}"
        profile = {"id": bot_id, "name": bot_user["name"], "app_id": f"A{bot_user['id'][1:]}"}
        if legacy:
            extra: JSON = {"subtype": "bot_message", "bot_id": bot_id, "username": bot_user["name"]}
            message = self._post(channel["id"], None, text, thread_ts, extra)
        else:
            message = self._post(channel["id"], bot_user["id"], text, thread_ts,
                                 {"bot_id": bot_id, "app_id": profile["app_id"], "bot_profile": profile})
        await self._announce(channel["id"], message)
        return copy.deepcopy(message)

    async def user_clicks(self, app: SlackApp, message: JSON, user: JSON, action_id: str, *,
                          positive: bool | None = None) -> None:
        """``user`` presses the button ``action_id`` on an app's message: a ``block_actions`` request. On a
        ``feedback_buttons`` element, ``positive`` says which of its two buttons (👍 or 👎).

        A button the app has since removed can still be pressed on ``message`` as the caller last saw it,
        as on a Slack client that has not caught up with the edit yet.
        """
        await self._deliver(app, self.click_payload(app, message, user, action_id, positive=positive),
                            kind="interactive")

    def click_payload(self, app: SlackApp, message: JSON, user: JSON, action_id: str, *,
                      positive: bool | None = None) -> JSON:
        """The ``block_actions`` payload of ``user`` pressing ``action_id``, without sending it. A feedback
        button's action is the element's type and id with the pressed button's ``value``, as Slack sends it."""
        channel_id = self._channel_of(message["ts"])
        posted = self._find(channel_id, message["ts"]) or message
        trigger = f"{next(self._ids)}.{secrets.token_hex(8)}"
        self._triggers[trigger] = (user["id"], time.monotonic())
        if not _has_button(posted, action_id):
            posted = message  # the stale view: the buttons the person still sees
        action, block_id = _button(posted, action_id)
        if action.get("type") == "feedback_buttons":
            pressed = action["positive_button" if positive is not False else "negative_button"]
            action = {"type": "feedback_buttons", "action_id": action_id, "value": pressed["value"],
                      "text": pressed["text"]}
        container = {"type": "message", "message_ts": posted["ts"], "channel_id": channel_id, "is_ephemeral": False}
        if posted.get("thread_ts"):
            container["thread_ts"] = posted["thread_ts"]
        return {
            "type": "block_actions", "api_app_id": app.app_id, "token": "verification-token-unused",
            "user": {"id": user["id"], "username": user["name"], "name": user["name"], "team_id": self.team_id},
            "team": {"id": self.team_id, "domain": "local"}, "container": container,
            "channel": {"id": channel_id, "name": self._channels[channel_id].get("name", "directmessage")},
            "message": copy.deepcopy(posted), "trigger_id": trigger,
            "response_url": f"{self.url}/actions/{secrets.token_hex(8)}",
            "actions": [{**copy.deepcopy(action), "block_id": block_id, "action_ts": f"{time.time():.6f}"}],
        }

    async def user_submits(self, app: SlackApp, view: JSON, user: JSON, values: dict[str, dict[str, str]]) -> None:
        """``user`` submits the modal ``view`` with ``values`` typed in its inputs (block id → action id → text): a
        ``view_submission`` request, whoever the modal was opened for (Slack itself lets only that person submit)."""
        await self._deliver(app, self.submission_payload(app, view, user, values), kind="interactive")

    def submission_payload(self, app: SlackApp, view: JSON, user: JSON, values: dict[str, dict[str, str]]) -> JSON:
        """The ``view_submission`` payload of ``user`` submitting ``view``, without sending it."""
        state = {block: {action: {"type": "plain_text_input", "value": text} for action, text in inputs.items()}
                 for block, inputs in values.items()}
        submitted = {key: copy.deepcopy(value) for key, value in view.items() if key != "user"}
        return {"type": "view_submission", "team": {"id": self.team_id, "domain": "local"},
                "user": {"id": user["id"], "username": user["name"], "name": user["name"], "team_id": self.team_id},
                "api_app_id": app.app_id, "token": "verification-token-unused",
                "trigger_id": f"{next(self._ids)}.{secrets.token_hex(8)}", "view": submitted | {"state": {
                    "values": state}}, "response_urls": [], "is_enterprise_install": False, "enterprise": None}

    async def user_runs_command(self, app: SlackApp, channel: JSON, user: JSON, command: str, text: str = "") -> JSON:
        """``user`` runs the app's slash ``command`` (``/new``) in ``channel``: over Socket Mode, or POSTed
        form-encoded to ``app.commands_url``. Slack never sends one from inside a thread. Returns the payload."""
        payload = {"token": "verification-token-unused", "team_id": self.team_id, "team_domain": "local",
                   "channel_id": channel["id"], "channel_name": channel.get("name", "directmessage"),
                   "user_id": user["id"], "user_name": user["name"], "command": command, "text": text,
                   "api_app_id": app.app_id, "is_enterprise_install": "false",
                   "response_url": f"{self.url}/commands/{secrets.token_hex(8)}",
                   "trigger_id": f"{next(self._ids)}.{secrets.token_hex(8)}"}
        if app.request_url:
            body = urlencode(payload).encode()
            headers = {"Content-Type": "application/x-www-form-urlencoded", **self.signed_headers(app, body)}
            status, answer = await self.post_to_app(app, body, headers, url=app.commands_url or app.request_url)
            app.http.append(HttpDelivery(event_id=None, retry_num=0, status=status, body=answer, at=time.monotonic()))
            await self._notify()
        else:
            await self._deliver(app, payload, kind="slash_commands")
        return payload

    async def redeliver(self, event_id: str) -> None:
        """Slack's retry of an event it believes was not received: same payload, ``X-Slack-Retry-Num: 1``."""
        app, payload = self._events[event_id]
        await self._deliver(app, payload, kind="events_api", retry=1)

    async def send_frame(self, app: SlackApp, frame: str) -> None:
        """Send ``frame`` verbatim over the app's Socket Mode connection, as a broken or hostile Slack might.

        An envelope id in it is tracked like any other: acknowledged, it lands in ``app.acked``.
        """
        with contextlib.suppress(ValueError, AttributeError, RecursionError):
            envelope = json.loads(frame)
            if isinstance(envelope.get("envelope_id"), str):
                app.unacked[envelope["envelope_id"]] = {**envelope, "retry_attempt": 0}
        async with app.send_lock:
            await app.sockets[-1].send_str(frame)
        await self._notify()

    def events_for(self, app: SlackApp, *, event_type: str | None = None) -> list[JSON]:
        """The event callbacks sent to ``app``, oldest first."""
        return [copy.deepcopy(payload) for target, payload in self._events.values()
                if target is app and event_type in (None, payload["event"]["type"])]

    # -- what the operator does --------------------------------------------------------------------

    def fail_next(self, method: str, *, retry_after: int = 1) -> None:
        """Answer the next call of ``method`` with HTTP 429 and ``Retry-After: retry_after``."""
        self._failures.setdefault(method, []).append(retry_after)

    def answer_never(self, method: str) -> None:
        """The next call of ``method`` is carried out, but its answer never comes: the caller dies waiting, as a
        process killed between posting a message and recording its ts would."""
        self._unanswered.add(method)

    async def drop_socket(self, app: SlackApp) -> None:
        """Cut every Socket Mode connection of ``app`` without a ``disconnect`` message."""
        for socket in list(app.sockets):
            await socket.close(code=aiohttp.WSCloseCode.GOING_AWAY)

    async def request_refresh(self, app: SlackApp) -> None:
        """Ask ``app`` to reconnect, as Slack does every few hours: ``disconnect`` then close."""
        for socket in list(app.sockets):
            with contextlib.suppress(ConnectionError):
                await socket.send_json({"type": "disconnect", "reason": "refresh_requested",
                                        "debug_info": {"host": "local"}})
            await socket.close()

    def signed_headers(self, app: SlackApp, body: bytes, *, timestamp: int | None = None,
                       secret: str | None = None) -> dict[str, str]:
        """The headers Slack sends with ``body``: a ``v0`` signature with the app's (or another) secret."""
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        base = b"v0:" + stamp.encode() + b":" + body
        digest = hmac.new((secret or app.signing_secret).encode(), base, hashlib.sha256).hexdigest()
        return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}

    async def post_to_app(self, app: SlackApp, body: bytes, headers: dict[str, str],
                          *, url: str | None = None) -> tuple[int, str]:
        """POST ``body`` to the app's request URL (or ``url``) with exactly these headers; returns (status, text)."""
        target = url or app.request_url
        if self._server.session is None or target is None:
            raise RuntimeError("start the local workspace and give the app a request_url first")
        async with self._server.session.post(target, data=body, headers=headers) as answer:
            return answer.status, await answer.text()

    async def verify_url(self, app: SlackApp) -> tuple[int, str, str]:
        """Slack's ``url_verification`` handshake; returns (status, answer, the challenge that was sent)."""
        challenge = secrets.token_urlsafe(24)
        body = json.dumps({"token": "verification-token-unused", "challenge": challenge,
                           "type": "url_verification"}).encode()
        headers = {"Content-Type": "application/json", **self.signed_headers(app, body)}
        status, text = await self.post_to_app(app, body, headers)
        return status, text, challenge

    # -- reading the workspace ---------------------------------------------------------------------

    def messages(self, channel: JSON, *, thread_ts: str | None = None) -> list[JSON]:
        """Top-level messages of a channel, or the replies of one thread (without its first message)."""
        stored = self._messages[channel["id"]]
        if thread_ts is None:
            return [copy.deepcopy(m) for m in stored if m.get("thread_ts") in (None, m["ts"])]
        return [copy.deepcopy(m) for m in stored if m.get("thread_ts") == thread_ts and m["ts"] != thread_ts]

    def status(self, channel: JSON, thread_ts: str) -> str:
        """The status line under a thread now ("" when none shows)."""
        return self.assistant.statuses.get((channel["id"], thread_ts), "")

    def texts(self, channel: JSON, *, by: SlackApp | JSON, thread_ts: str | None = None) -> list[str]:
        """What ``by`` (an app's bot or a person) has written, top-level or in one thread, as stored."""
        user_id = by.bot_user_id if isinstance(by, SlackApp) else by["id"]
        return [m["text"] for m in self.messages(channel, thread_ts=thread_ts) if m.get("user") == user_id]

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float = 30.0,  # noqa: ASYNC109
                       recheck: float | None = None) -> None:
        # A timeout argument, as the local Telegram's: `await slack.wait_for(lambda: ..., timeout=2)`.
        """Return once ``predicate()`` is true, re-checked after every API call, delivery and ack.

        Args:
            recheck: Also re-check every so many seconds, for a condition the local workspace cannot see change
                (an app that has read the answer to its last call).

        Raises:
            TimeoutError: it stayed false for ``timeout`` seconds.
        """
        await self._changes.wait_for(predicate, timeout=timeout, recheck=recheck)

    # -- delivery ----------------------------------------------------------------------------------

    async def _announce(self, channel_id: str, message: JSON) -> None:
        """Send a new message to every member app: ``message``, and ``app_mention`` to each app it names."""
        channel = self._channels[channel_id]
        named = set(_MENTION.findall(message.get("text") or ""))
        deliveries: list[Awaitable[None]] = []
        for app in self._member_apps(channel_id):
            deliveries.append(self._emit(app, _message_event(channel, message)))
            if app.bot_user_id in named and not channel["is_im"]:
                deliveries.append(self._emit(app, _mention_event(channel, message)))
        await asyncio.gather(*deliveries)

    async def _emit(self, app: SlackApp, event: JSON) -> None:
        event_id = f"Ev{next(self._ids):010d}"
        payload = {"token": "verification-token-unused", "team_id": self.team_id, "context_team_id": self.team_id,
                   "api_app_id": app.app_id, "event": event, "type": "event_callback", "event_id": event_id,
                   "event_time": int(time.time()), "is_ext_shared_channel": False,
                   "authorizations": [{"enterprise_id": None, "team_id": self.team_id, "user_id": app.bot_user_id,
                                       "is_bot": True, "is_enterprise_install": False}]}
        self._events[event_id] = (app, payload)
        await self._deliver(app, payload, kind="events_api")

    async def _deliver(self, app: SlackApp, payload: JSON, *, kind: EventKind, retry: int = 0) -> None:
        if app.request_url:
            await self._post_event(app, payload, kind=kind, retry=retry)
            return
        envelope = {"envelope_id": str(uuid.uuid4()), "type": kind, "payload": copy.deepcopy(payload),
                    "accepts_response_payload": kind != "events_api", "retry_attempt": retry,
                    "retry_reason": "timeout" if retry else ""}
        if app.sockets:
            await self._send_envelope(app, envelope)
        else:
            app.waiting.append(envelope)

    async def _send_envelope(self, app: SlackApp, envelope: JSON) -> None:
        app.unacked[envelope["envelope_id"]] = envelope
        async with app.send_lock:
            # A socket closing meanwhile leaves the envelope unacknowledged: it goes again on the next connection.
            with contextlib.suppress(ConnectionError, IndexError):
                await app.sockets[-1].send_json(envelope)
        await self._notify()

    async def _post_event(self, app: SlackApp, payload: JSON, *, kind: EventKind, retry: int) -> None:
        """POST as Slack does, retrying a refused or failed request up to three times."""
        content_type = "application/x-www-form-urlencoded" if kind == "interactive" else "application/json"
        body = urlencode({"payload": json.dumps(payload)}) if kind == "interactive" else json.dumps(payload)
        url = (app.interactivity_url or app.request_url) if kind == "interactive" else app.request_url
        return await self._post_attempts(app, payload.get("event_id"), body.encode(), content_type, retry, url)

    async def _post_attempts(self, app: SlackApp, event_id: str | None, body: bytes, content_type: str,
                             retry: int, url: str | None) -> None:
        for attempt in range(retry, retry + 1 + len(self._retry_delays)):
            headers = {"Content-Type": content_type, **self.signed_headers(app, body)}
            if attempt:
                headers |= {"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": "http_error"}
            try:
                status, text = await self.post_to_app(app, body, headers, url=url)
            except (aiohttp.ClientError, TimeoutError) as error:
                status, text = 0, f"{type(error).__name__}: {error}"
            app.http.append(HttpDelivery(event_id=event_id, retry_num=attempt, status=status,
                                         body=text, at=time.monotonic()))
            await self._notify()
            if 200 <= status < 300 or attempt - retry >= len(self._retry_delays):
                return
            await asyncio.sleep(self._retry_delays[attempt - retry])

    async def _handle_socket(self, request: web.Request) -> web.StreamResponse:
        app = self._tickets.pop(request.query.get("ticket", ""), None)
        if app is None:
            return web.Response(status=401, text="invalid or used ticket")
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        app.sockets.append(socket)
        app.connected_at.append(time.monotonic())
        try:
            await socket.send_json({"type": "hello", "num_connections": len(app.sockets),
                                    "debug_info": {"host": "local", "approximate_connection_time": 18060},
                                    "connection_info": {"app_id": app.app_id}})
            await self._flush(app)
            await self._notify()
            async for frame in socket:
                if frame.type == aiohttp.WSMsgType.TEXT:
                    await self._acknowledge(app, frame.data)
        finally:
            app.sockets.remove(socket)
            await self._notify()
        return socket

    async def _flush(self, app: SlackApp) -> None:
        """On a new connection: envelopes never acknowledged go again (as retries), then the queued ones."""
        again = [{**envelope, "retry_attempt": envelope["retry_attempt"] + 1, "retry_reason": "timeout"}
                 for envelope in app.unacked.values()]
        queued, app.waiting = app.waiting, []
        for envelope in again + queued:
            await self._send_envelope(app, envelope)

    async def _acknowledge(self, app: SlackApp, data: str) -> None:
        with contextlib.suppress(ValueError):
            envelope_id = json.loads(data).get("envelope_id")
            if envelope_id in app.unacked:
                if self.on_ack is not None:
                    await self.on_ack(app, envelope_id)
                del app.unacked[envelope_id]
                app.acked.append(envelope_id)
                await self._notify()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _notify(self) -> None:
        self._changes.notify()

    # -- the Web API -------------------------------------------------------------------------------

    async def _handle_api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        try:
            params = await _read_params(request)
        except ApiError as error:
            return web.json_response({"ok": False, "error": error.error})
        token = _bearer(request) or params.pop("token", None)
        self.calls.append(ApiCall(method=method, params=params, token=token, at=time.monotonic()))
        await self._notify()
        if failures := self._failures.get(method):
            retry_after = failures.pop(0)
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429,
                                     headers={"Retry-After": str(retry_after)})
        try:
            app = self._authorize(method, token)
            handler = self._methods.get(method)
            if handler is None:
                raise ApiError("unknown_method")
            body = {"ok": True, **await handler(app, params)}
        except (ApiError, FileRefused, StreamRefused) as error:
            body = {"ok": False, "error": error.error}
        await self._notify()
        if method in self._unanswered:
            self._unanswered.discard(method)
            await self._stopping.wait()
        return web.json_response(body)

    def _authorize(self, method: str, token: str | None) -> SlackApp:
        if not token:
            raise ApiError("not_authed")
        app = self._apps.get(token)
        if app is None:
            raise ApiError("invalid_auth")
        app_level = token == app.app_token
        if app_level != (method == _APP_TOKEN_METHOD):
            raise ApiError("not_allowed_token_type")
        if method in _SCOPES and _SCOPES[method] not in app.scopes:
            raise ApiError("missing_scope")
        return app

    def _reads_files(self, token: str) -> bool:
        app = self._apps.get(token)
        return app is not None and token == app.token and "files:read" in app.scopes

    def _method_table(self) -> dict[str, Handler]:
        return {
            "auth.test": self._auth_test,
            "apps.connections.open": self._connections_open,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.postEphemeral": self._post_ephemeral,
            "conversations.replies": self._replies,
            "conversations.history": self._history,
            "conversations.info": self._info,
            "conversations.members": self._members,
            "conversations.list": self._list,
            "users.info": self._user_info,
            "files.getUploadURLExternal": self._upload_url,
            "files.completeUploadExternal": self._complete_upload,
            "files.info": self._file_info,
            "views.open": self._views_open,
            "reactions.add": self._react,
            "reactions.remove": self._unreact,
        } | {name: _as_app(handler) for name, handler in self.assistant.methods().items()}

    async def _auth_test(self, app: SlackApp, params: JSON) -> JSON:
        return {"url": "https://local.slack.com/", "team": "Local Slack", "user": app.name, "team_id": self.team_id,
                "user_id": app.bot_user_id, "bot_id": app.bot_id, "is_enterprise_install": False}

    async def _connections_open(self, app: SlackApp, params: JSON) -> JSON:
        ticket = secrets.token_hex(16)
        self._tickets[ticket] = app
        return {"url": f"{self.url.replace('http://', 'ws://')}/link/?ticket={ticket}&app_id={app.app_id}"}

    async def _post_message(self, app: SlackApp, params: JSON) -> JSON:
        channel = self._member_channel(app, params)
        text, blocks = params.get("text"), params.get("blocks")
        if not text and not blocks:
            raise ApiError("no_text")
        if text and len(text) > POST_LIMIT:
            raise ApiError("msg_too_long")
        profile = {"id": app.bot_id, "name": app.name, "app_id": app.app_id}
        extra = {"bot_id": app.bot_id, "app_id": app.app_id, "bot_profile": profile}
        message = self._post(channel["id"], app.bot_user_id, text or "", params.get("thread_ts"),
                             extra | ({"blocks": blocks} if blocks else {}))
        self.assistant.posted(channel["id"], message.get("thread_ts"))
        self._spawn(self._announce(channel["id"], message))  # as Slack does: apps hear their own posts
        return {"channel": channel["id"], "ts": message["ts"], "message": copy.deepcopy(message)}

    async def _update(self, app: SlackApp, params: JSON) -> JSON:
        channel = self._known_channel(params)
        message = self._find(channel["id"], str(params.get("ts", "")))
        if message is None:
            raise ApiError("message_not_found")
        if message.get("user") != app.bot_user_id:
            raise ApiError("cant_update_message")
        text, blocks = params.get("text"), params.get("blocks")
        if not text and not blocks:
            raise ApiError("no_text")
        if text and len(text) > UPDATE_LIMIT:
            raise ApiError("msg_too_long")
        previous = copy.deepcopy(message)
        self.assistant.streaming.discard(message["ts"])
        message["text"] = text or ""
        if blocks is not None:
            message["blocks"] = blocks
        message["edited"] = {"user": app.bot_user_id, "ts": self._next_ts()}
        self._spawn(self._announce_change(channel, message, previous))
        return {"channel": channel["id"], "ts": message["ts"], "text": message["text"],
                "message": copy.deepcopy(message)}

    async def _announce_change(self, channel: JSON, message: JSON, previous: JSON) -> None:
        event = {"type": "message", "subtype": "message_changed", "hidden": True, "channel": channel["id"],
                 "ts": self._next_ts(), "event_ts": self._next_ts(), "channel_type": _channel_type(channel),
                 "message": copy.deepcopy(message), "previous_message": previous}
        await asyncio.gather(*(self._emit(app, event) for app in self._member_apps(channel["id"])))

    async def _post_ephemeral(self, app: SlackApp, params: JSON) -> JSON:
        channel = self._member_channel(app, params)
        if params.get("user") not in channel["members"]:
            raise ApiError("user_not_in_channel")
        if not params.get("text") and not params.get("blocks"):
            raise ApiError("no_text")
        ts = self._next_ts()
        self.ephemeral.append({"channel": channel["id"], "user": params["user"], "text": params.get("text", ""),
                               "thread_ts": params.get("thread_ts"), "ts": ts})
        return {"message_ts": ts}

    async def _views_open(self, app: SlackApp, params: JSON) -> JSON:
        """A modal for the person whose click gave ``trigger_id``: within 3 seconds of it, once."""
        trigger, view = params.get("trigger_id"), params.get("view")
        if not is_json_object(view) or view.get("type") != "modal" or not view.get("title"):
            raise ApiError("invalid_arguments")
        issued = self._triggers.get(str(trigger))
        if issued is None:
            raise ApiError("invalid_trigger_id")
        if time.monotonic() - issued[1] > TRIGGER_LASTS:
            raise ApiError("expired_trigger_id")
        del self._triggers[str(trigger)]
        opened: JSON = {"id": f"V{next(self._ids):010d}", "team_id": self.team_id, "type": "modal",
                        "blocks": copy.deepcopy(view.get("blocks") or []),
                        "private_metadata": str(view.get("private_metadata") or ""),
                        "callback_id": str(view.get("callback_id") or ""), "state": {"values": {}},
                        "hash": secrets.token_hex(8), "title": view["title"], "clear_on_close": False,
                        "notify_on_close": bool(view.get("notify_on_close")), "close": view.get("close"),
                        "submit": view.get("submit"), "previous_view_id": None, "root_view_id": None,
                        "app_id": app.app_id, "external_id": "", "app_installed_team_id": self.team_id,
                        "bot_id": app.bot_id}
        opened["root_view_id"] = opened["id"]
        self.views.append(opened | {"user": issued[0]})
        return {"view": copy.deepcopy(opened)}

    async def _react(self, app: SlackApp, params: JSON) -> JSON:
        """As Slack: the reaction by its short name, once per person on a message."""
        message, name = self._reacted_on(app, params)
        reactions: list[JSON] = message.setdefault("reactions", [])
        found = next((r for r in reactions if r["name"] == name), None)
        reaction: JSON = {"name": name, "users": [], "count": 0} if found is None else found
        if found is None:
            reactions.append(reaction)
        users = cast(list[str], reaction["users"])
        if app.bot_user_id in users:
            raise ApiError("already_reacted")
        users.append(app.bot_user_id)
        reaction["count"] = len(users)
        await self._notify()
        return {}

    async def _unreact(self, app: SlackApp, params: JSON) -> JSON:
        message, name = self._reacted_on(app, params)
        reactions: list[JSON] = message.get("reactions", [])
        reaction = next((r for r in reactions if r["name"] == name), None)
        if reaction is None or app.bot_user_id not in reaction["users"]:
            raise ApiError("no_reaction")
        users = cast(list[str], reaction["users"])
        users.remove(app.bot_user_id)
        reaction["count"] = len(users)
        if not users:
            reactions.remove(reaction)
        await self._notify()
        return {}

    def _reacted_on(self, app: SlackApp, params: JSON) -> tuple[JSON, str]:
        channel = self._member_channel(app, params)
        message = self._find(channel["id"], str(params.get("timestamp", "")))
        if message is None:
            raise ApiError("message_not_found")
        name = str(params.get("name", ""))
        if not re.fullmatch(r"[a-z0-9_+\-']+", name):
            raise ApiError("invalid_name")
        return message, name

    async def _replies(self, app: SlackApp, params: JSON) -> JSON:
        channel = self._member_channel(app, params)
        root = self._find(channel["id"], str(params.get("ts", "")))
        if root is None:
            raise ApiError("thread_not_found")
        thread = root.get("thread_ts") or root["ts"]
        found = [m for m in self._messages[channel["id"]] if m["ts"] == thread or m.get("thread_ts") == thread]
        return _page(found, "messages", params)

    async def _history(self, app: SlackApp, params: JSON) -> JSON:
        channel = self._member_channel(app, params)
        top = [m for m in reversed(self._messages[channel["id"]]) if m.get("thread_ts") in (None, m["ts"])]
        return _page(top, "messages", params)

    async def _info(self, app: SlackApp, params: JSON) -> JSON:
        channel = self._known_channel(params)
        return {"channel": self._channel_view(channel, app)}

    async def _members(self, app: SlackApp, params: JSON) -> JSON:
        return _page(list(self._member_channel(app, params)["members"]), "members", params)

    async def _list(self, app: SlackApp, params: JSON) -> JSON:
        types = set(str(params.get("types") or "public_channel").split(","))
        listed = [self._channel_view(c, app) for c in self._channels.values() if _list_type(c) in types]
        return _page(listed, "channels", params)

    async def _user_info(self, app: SlackApp, params: JSON) -> JSON:
        user = self._users.get(str(params.get("user", "")))
        if user is None:
            raise ApiError("user_not_found")
        return {"user": copy.deepcopy(user)}

    async def _upload_url(self, app: SlackApp, params: JSON) -> JSON:
        return self.files.upload_url(app.token, params)

    async def _complete_upload(self, app: SlackApp, params: JSON) -> JSON:
        """The uploaded files shared as one message of the bot's, in the thread, with `initial_comment`."""
        channel = self._member_channel(app, {"channel": params.get("channel_id", "")})
        done = self.files.complete(app.token, params, app.bot_user_id)
        extra = {"bot_id": app.bot_id, "app_id": app.app_id, "files": done, "upload": True}
        message = self._post(channel["id"], app.bot_user_id, str(params.get("initial_comment") or ""),
                             params.get("thread_ts"), extra)
        self._spawn(self._announce(channel["id"], message))
        return {"files": done}

    async def _file_info(self, app: SlackApp, params: JSON) -> JSON:
        return self.files.info(params)

    # -- what the assistant methods use (`local_platforms/slack_assistant.py`) --------------------------

    def member_channel(self, bot_user_id: str, channel_id: str) -> JSON:
        channel = self._known_channel({"channel": channel_id})
        if bot_user_id not in channel["members"]:
            raise ApiError("not_in_channel")
        return channel

    def find(self, channel_id: str, ts: str) -> JSON | None:
        return self._find(channel_id, ts)

    def post_as_app(self, token: str, channel_id: str, text: str, thread_ts: str) -> JSON:
        app = self._apps[token]
        extra = {"bot_id": app.bot_id, "app_id": app.app_id,
                 "bot_profile": {"id": app.bot_id, "name": app.name, "app_id": app.app_id}}
        message = self._post(channel_id, app.bot_user_id, text, thread_ts, extra)
        self.assistant.posted(channel_id, thread_ts)
        self._spawn(self._announce(channel_id, message))
        return message

    # -- state helpers -----------------------------------------------------------------------------

    def _post(self, channel_id: str, user_id: str | None, text: str, thread_ts: str | None, extra: JSON) -> JSON:
        message: JSON = {"type": "message", "text": text, "ts": self._next_ts(), "team": self.team_id, **extra}
        if user_id is not None:
            message["user"] = user_id
        if thread_ts:
            root = self._find(channel_id, thread_ts)
            if root is None:
                raise ApiError("thread_not_found")
            root["thread_ts"] = root["ts"]
            root["reply_count"] = root.get("reply_count", 0) + 1
            message |= {"thread_ts": root["ts"], "parent_user_id": root.get("user")}
        self._messages[channel_id].append(message)
        return message

    def _next_ts(self) -> str:
        return f"{self._epoch}.{next(self._ids):06d}"

    def _find(self, channel_id: str, ts: str) -> JSON | None:
        return next((m for m in self._messages.get(channel_id, []) if m["ts"] == ts), None)

    def _channel_of(self, ts: str) -> str:
        return next(cid for cid, messages in self._messages.items() if any(m["ts"] == ts for m in messages))

    def _known_channel(self, params: JSON) -> JSON:
        channel = self._channels.get(str(params.get("channel", "")))
        if channel is None:
            raise ApiError("channel_not_found")
        return channel

    def _member_channel(self, app: SlackApp, params: JSON) -> JSON:
        channel = self._known_channel(params)
        if app.bot_user_id not in channel["members"]:
            raise ApiError("not_in_channel")
        return channel

    def _member_apps(self, channel_id: str) -> list[SlackApp]:
        members = self._channels[channel_id]["members"]
        return [app for token, app in self._apps.items() if token == app.token and app.bot_user_id in members]

    def _channel_view(self, channel: JSON, app: SlackApp) -> JSON:
        view = {key: value for key, value in channel.items() if key != "members"}
        return view | {"is_member": app.bot_user_id in channel["members"], "num_members": len(channel["members"])}


# -- payload shapes ---------------------------------------------------------------------------------


def _as_app(handler: Callable[[str, str, JSON], Awaitable[JSON]]) -> Handler:
    async def handle(app: SlackApp, params: JSON) -> JSON:
        return await handler(app.token, app.bot_user_id, params)
    return handle


def _message_event(channel: JSON, message: JSON) -> JSON:
    event = {key: copy.deepcopy(value) for key, value in message.items() if key not in ("reply_count",)}
    return event | {"channel": channel["id"], "event_ts": message["ts"], "channel_type": _channel_type(channel)}


def _mention_event(channel: JSON, message: JSON) -> JSON:
    keys = ("user", "bot_id", "bot_profile", "text", "ts", "team", "thread_ts", "client_msg_id", "files")
    event = {key: copy.deepcopy(message[key]) for key in keys if key in message}
    return {"type": "app_mention", **event, "channel": channel["id"], "event_ts": message["ts"]}


def _channel_type(channel: JSON) -> str:
    if channel["is_im"]:
        return "im"
    if channel["is_mpim"]:
        return "mpim"
    return "group" if channel["is_private"] else "channel"


def _list_type(channel: JSON) -> str:
    kind = _channel_type(channel)
    return {"channel": "public_channel", "group": "private_channel"}.get(kind, kind)


def _elements(message: JSON) -> list[tuple[JSON, JSON]]:
    """Each Block Kit element of a message, with its block (messages here were posted by bots under test)."""
    blocks: list[JSON] = message.get("blocks") or []
    pairs: list[tuple[JSON, JSON]] = []
    for block in blocks:
        elements: list[JSON] = block.get("elements") or []
        pairs += [(block, element) for element in elements]
    return pairs


def _has_button(message: JSON, action_id: str) -> bool:
    return any(element.get("action_id") == action_id for _, element in _elements(message))


def _button(message: JSON, action_id: str) -> tuple[JSON, str]:
    for block, element in _elements(message):
        if element.get("action_id") == action_id:
            return element, str(block.get("block_id", ""))
    raise ValueError(f"message {message.get('ts')!r} has no button {action_id!r}")


def _member_ids(members: list[JSON | SlackApp]) -> list[str]:
    return [member.bot_user_id if isinstance(member, SlackApp) else member["id"] for member in members]


def _page(items: list[Any], key: str, params: JSON) -> JSON:
    """One page of a cursor-paginated list, as Slack answers: ``response_metadata.next_cursor``."""
    try:
        start = int(params.get("cursor") or 0)
        limit = min(max(int(params.get("limit") or 100), 1), 1000)
    except ValueError:
        raise ApiError("invalid_cursor") from None
    page = items[start : start + limit]
    more = start + limit < len(items)
    return {key: copy.deepcopy(page), "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""}}


def _bearer(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


async def _read_params(request: web.Request) -> JSON:
    """Parameters from the query string and a JSON or form body; ``blocks`` in a form is JSON text."""
    params: JSON = dict(request.query)
    if request.content_type == "application/json":
        body = await json_object(request)
        if body is None:
            raise ApiError("invalid_json")
        params |= body
    elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        params |= {key: value for key, value in (await request.post()).items() if isinstance(value, str)}
    for key in ("blocks", "attachments", "view"):
        if isinstance(params.get(key), str):
            try:
                params[key] = json.loads(params[key])
            except ValueError:
                raise ApiError(f"invalid_{key}") from None
    return params
