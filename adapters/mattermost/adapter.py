"""Mattermost over mattermostdriver: the WebSocket event stream or the outgoing webhook, one parser.

Every transport hands `parse` the WebSocket's `posted` event: the outgoing webhook and the catch-up
after a reconnect rebuild it from REST posts (`adapters/mattermost/events.py`). A channel post is the
root of its own thread unless it is a reply, so a top-level mention is answered in a thread under it
and `thread_id` is the root post id on both transports. Markdown is sent as is: Mattermost renders it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import requests
from websockets.exceptions import ConnectionClosedOK

from adapters.base import (
    Addressed,
    ApiTrouble,
    ApprovalCard,
    ApprovalClick,
    ApprovalOutcome,
    BotIdentity,
    ChatAddress,
    Deliver,
    FileRef,
    FileUnreadable,
    HistoryItem,
    Inbound,
    MalformedPayload,
    MenuCommand,
    MessageRef,
    OutgoingFile,
    Platform,
    PlatformLimits,
    QuestionCard,
    Speaker,
    VerificationError,
    too_large,
)
from adapters.mattermost.buttons import (
    CHOICE_BUTTONS,
    approval_props,
    check_click,
    check_submission,
    feedback_props,
    is_click,
    is_submission,
    question_props,
    read_click,
    reason_dialog,
    stop_props,
)
from adapters.mattermost.commands import SLASH_EVENT, SlashCommands, slash_word
from adapters.mattermost.directory import MattermostDirectory
from adapters.mattermost.doctor import team_problem
from adapters.mattermost.events import (
    DIRECT,
    POSTED,
    Posted,
    integer,
    names,
    names_a_room,
    posted_event,
    read_posted,
    read_webhook_fields,
    replayed_events,
    without_address,
)
from adapters.mattermost.people import MattermostPeople, display_name
from adapters.mattermost.rest import MattermostApi, posts_of, signed_in, status_of, websocket_url
from adapters.mattermost.socket import SocketRefused, event_stream
from adapters.protocols import WebhookAnswer, WebhookRoute
from adapters.wire import UNREADABLE, is_object, optional_text_id, read_json_object, refuse_unreadable, text_id

log = logging.getLogger(__name__)

POST_MAX_RUNES = 16_383
"""`PostMessageMaxRunesV2` in Mattermost's `server/public/model/post.go`."""
FRESH_START_WINDOW = 5 * 60.0
"""On a fresh start nothing says when the last connection ended: catch up on the last five minutes."""
CATCH_UP_MARGIN = 120.0
"""Read back this far before the last moment the stream was known alive: keepalive needs up to ~40 s to
notice a dead connection, and the server's clock may differ a little from ours. Dedupe absorbs the overlap."""
IDLE_TICK = 15.0
REFUSED = frozenset({400, 403, 404})
"""Statuses of a look-up for a post or channel that asking again will not change."""
MAX_FILE_BYTES = 100 * 2**20
"""Mattermost's default `FileSettings.MaxFileSize`; a server set lower answers 413, which `post_file` says."""
FILE_ID = re.compile(r"[a-z0-9]{26}")
"""A Mattermost id (`model.NewId`: 26 characters of base32, lower case)."""
CLICKER_NAME = "gateway_clicker_name"
"""Key under which a stored button call carries the clicker's full name, looked up before it is delivered."""
CLICKER_HANDLE = "gateway_clicker_handle"
"""Likewise the username, for a dialog submission (a button call carries `user_name` itself)."""


class Streaming:
    """The event stream of one bot: authenticate, catch up on what was missed, then deliver live posts."""

    def __init__(self, *, bot_id: str, url: str, token: str,
                 missed: Callable[[float], Awaitable[list[dict[str, Any]]]],
                 signed_in: Callable[[], Awaitable[object]]) -> None:
        """`missed(since)` rebuilds the events of posts made since then; `signed_in` re-checks the token."""
        self._bot_id = bot_id
        self._url = url
        self._token = token
        self._missed = missed
        self._signed_in = signed_in
        self._seen_until: float | None = None
        """Wall-clock time up to which the stream delivered everything; None before the first session."""

    async def run_transport(self, deliver: Deliver) -> None:
        """Hold one session; it ends when the server closes the stream (returns) or it fails.

        Live events that arrive during the catch-up wait in the socket's queue; a post seen both ways is
        deduped by the inbox.
        """
        try:
            async with event_stream(self._url, self._token) as stream:
                connected_at = time.time()
                await self._catch_up(deliver)
                self._seen_until = connected_at
                log.info("mattermost bot %r: event stream connected", self._bot_id)
                while True:
                    event = await stream.next_event(idle=IDLE_TICK)
                    if event is not None and (event.get("event") == POSTED or UNREADABLE in event):
                        await deliver(event)
                    self._seen_until = time.time()
        except SocketRefused:
            await self._signed_in()  # a revoked token stops the bot here with a clear line; else retry
            raise
        except ConnectionClosedOK:
            log.info("mattermost closed the event stream of bot %r", self._bot_id)

    async def _catch_up(self, deliver: Deliver) -> None:
        """Feed the posts made while no stream was connected through `deliver` (dedupe makes repeats harmless).

        Reconnects within this process read back from the last moment the stream was alive; a fresh start
        reads back `FRESH_START_WINDOW`, since the last stream's end is not persisted.
        """
        now = time.time()
        since = now - FRESH_START_WINDOW if self._seen_until is None else self._seen_until - CATCH_UP_MARGIN
        events = await self._missed(since)
        for event in events:
            await deliver(event)
        if events:
            log.info("mattermost bot %r: read back %d post(s) from %.0f s before connecting", self._bot_id,
                     len(events), now - since)


def _download_failure(name: str, exc: Exception) -> str:
    """What the model is told of a download that failed: the status Mattermost answered, or that none came."""
    status = status_of(exc)
    if status in REFUSED or status == 401:
        return f"{name}: Mattermost would not hand it to the bot ({status}); is the bot a member of that channel?"
    if status is not None:
        return f"{name}: Mattermost answered the download with an error ({status})"
    if isinstance(exc, requests.ConnectionError | requests.Timeout):
        return f"{name}: Mattermost did not answer the download just now (sending it again may work)"
    return f"{name}: the download from Mattermost failed ({type(exc).__name__})"


class NotInChannel(Exception):
    """The bot account cannot read or post in a channel; the message names the channel and the fix."""


class MattermostAdapter:
    """A Mattermost bot: the WebSocket event stream (`transport`), or the outgoing webhook calling its route.

    It has no `close`: the driver opens a connection per call, so nothing is held between them.
    """

    platform: Platform = "mattermost"
    limits = PlatformLimits(max_text=16_000, max_edit_text=16_000, max_file_bytes=MAX_FILE_BYTES)
    """A little under `POST_MAX_RUNES`, which counts code points as `len` does."""

    def __init__(self, *, bot_id: str, token: str, server_url: str, transport: str = "websocket",
                 webhook_token: str | None = None, team: str | None = None, action_url: str | None = None,
                 action_key: str | None = None, on_api_trouble: ApiTrouble | None = None,
                 command_url: str | None = None) -> None:
        """`action_url` is where Mattermost sends approval button clicks (needs `server.public_url`);
        `action_key` signs each button's context; `on_api_trouble` hears of each REST call's 429 or failure;
        `command_url` is where the bot's slash commands call (`register_commands`)."""
        self.bot_id = bot_id
        self._action_url = action_url
        self._action_key = action_key
        self.choice_buttons = CHOICE_BUTTONS if action_url and action_key else 0
        """Buttons need somewhere for Mattermost to call: without it a question lists its options, numbered."""
        self.server_url = server_url
        self._webhook_token = webhook_token
        self._team = team
        self._api = MattermostApi(server_url=server_url, token=token, on_api_trouble=on_api_trouble)
        self._people = MattermostPeople(self._api, workspace=urlsplit(server_url).netloc)
        self.directory = MattermostDirectory(self._api, self._people, team=team)
        self._slash = SlashCommands(self._api, url=command_url)
        self.identity: BotIdentity | None = None
        self._channel_types: dict[str, str] = {}
        self._members_of: set[str] = set()
        self.transport: Streaming | None = None
        if transport == "websocket":
            self.transport = Streaming(bot_id=bot_id, url=websocket_url(server_url), token=token,
                                       missed=self._missed_events, signed_in=self.signed_in)

    async def open(self) -> BotIdentity:
        """Sign in, learn the bot's own id, and say in the log what is missing (a team, the id itself)."""
        me = await self.signed_in()
        user_id = str(me.get("id") or "")
        self.identity = BotIdentity(user_id=user_id, handle=me.get("username") or None,
                                    display_name=display_name(me))
        if not user_id:
            log.error("mattermost bot %r could not learn its own user id from GET /users/me; it answers direct "
                      "messages only until it can (mentions cannot be recognised without it)", self.bot_id)
        problem = team_problem(await self._api.my_teams(), self._team)
        if problem:
            log.error("mattermost bot %r: %s", self.bot_id, problem)
        return self.identity

    async def register_commands(self, commands: Sequence[MenuCommand]) -> None:
        """The commands as custom slash commands in the bot's teams (its configured `team` only, when set)."""
        teams = [t for t in await self._api.my_teams() if self._team in (None, t.get("name"), t.get("id"))]
        await self._slash.register(teams, commands)

    async def signed_in(self) -> dict[str, Any]:
        """`GET /users/me`; raises `PlatformConfigError` when the token or the server URL is wrong."""
        return await signed_in(self._api, bot_id=self.bot_id, server_url=self.server_url)

    # -- from the wire -------------------------------------------------------------------------------

    def parse(self, payload: Mapping[str, Any]) -> Inbound | ApprovalClick | None:
        refuse_unreadable(payload)
        if is_click(payload):
            return self._parse_click(payload)
        if is_submission(payload):
            return self._parse_reason(payload)
        if payload.get("event") == SLASH_EVENT:
            return self._parse_slash(payload)
        event = read_posted(payload)
        if event is None or event.system or event.from_bot or self._is_own(event):
            return None
        addressed = self._addressed(event)
        if addressed is None and event.bot_joined_later:
            return None
        direct = event.channel_type == DIRECT
        address = ChatAddress(bot_id=self.bot_id, platform="mattermost", channel_id=event.channel_id,
                              thread_id=event.root_id or (None if direct else event.post_id), is_direct=direct)
        handle = event.sender_name[1:] if event.sender_name.startswith("@") else None
        speaker = Speaker(platform="mattermost", platform_user_id=event.user_id, workspace=self._people.workspace,
                          handle=handle, display_name=handle or event.sender_name or event.user_id)
        me = self.identity
        text = without_address(event.message, me.handle if me else None, event.trigger_word)
        return Inbound(address=address, speaker=speaker, text=text, message_id=event.post_id, addressed=addressed,
                       attachments=event.files, raw=payload)

    def _parse_slash(self, payload: Mapping[str, Any]) -> Inbound | None:
        """A slash command call (https://developers.mattermost.com/integrate/slash-commands/custom/): not a post, so
        its `trigger_id` names it once; answered where it was typed, at the channel's top level."""
        data = payload.get("data")
        if not is_object(data):
            raise MalformedPayload("slash command without a data object")
        command, user_id, channel_id, trigger_id = (data.get(name) for name in ("command", "user_id", "channel_id",
                                                                                 "trigger_id"))
        if not (isinstance(command, str) and isinstance(user_id, str) and isinstance(channel_id, str)
                and isinstance(trigger_id, str) and command and user_id and channel_id and trigger_id):
            raise MalformedPayload("slash command without command, user_id, channel_id or trigger_id")
        me = self.identity
        if me is not None and user_id == me.user_id:
            return None
        address = ChatAddress(bot_id=self.bot_id, platform="mattermost", channel_id=channel_id,
                              is_direct=data.get("channel_type") == DIRECT)
        handle = str(data.get("user_name") or "") or None
        speaker = Speaker(platform="mattermost", platform_user_id=user_id, workspace=self._people.workspace,
                          handle=handle, display_name=handle or user_id)
        text = f"{slash_word(command)} {data.get('text') or ''}".strip()
        return Inbound(address=address, speaker=speaker, text=text, message_id=f"slash:{trigger_id}",
                       addressed="command", raw=payload)

    def _parse_click(self, payload: Mapping[str, Any]) -> ApprovalClick | None:
        click = read_click(payload)
        if click is None:
            return None
        address = ChatAddress(bot_id=self.bot_id, platform="mattermost", channel_id=click.channel_id,
                              thread_id=click.thread_id, is_direct=click.is_direct)
        clicker = Speaker(platform="mattermost", platform_user_id=click.user_id, workspace=self._people.workspace,
                          handle=click.user_name or None,
                          display_name=str(payload.get(CLICKER_NAME) or click.user_name or click.user_id))
        once = click.trigger_id or f"{click.user_id}:{click.verb}"
        return ApprovalClick(approval_id=click.approval_id, verb=click.verb, clicker=clicker, choice=click.choice,
                             card=MessageRef(address=address, message_id=click.post_id),
                             logical_id=f"{address.room_key}:click:{click.post_id}:{once}", raw=payload)

    def _parse_reason(self, payload: Mapping[str, Any]) -> ApprovalClick | None:
        """A submitted reason dialog, verified at the route (`check_submission`): a denial with the person's words."""
        try:
            state = check_submission(payload, self._action_key)
        except VerificationError:  # read back from the inbox after the key changed: nothing to decide any more
            return None
        address = ChatAddress(bot_id=self.bot_id, platform="mattermost",
                              channel_id=text_id(state.get("channel_id"), "reason dialog channel"),
                              thread_id=optional_text_id(state.get("thread_id"), "reason dialog thread"),
                              is_direct=state.get("direct") is True)
        user_id = text_id(payload.get("user_id"), "reason dialog user_id")
        name = str(payload.get(CLICKER_NAME) or "")
        clicker = Speaker(platform="mattermost", platform_user_id=user_id, workspace=self._people.workspace,
                          handle=str(payload.get(CLICKER_HANDLE) or "") or None, display_name=name or user_id)
        submission = payload.get("submission")
        reason = submission.get("reason") if is_object(submission) else None
        post_id = text_id(state.get("post_id"), "reason dialog post")
        return ApprovalClick(approval_id=str(state.get("approval_id") or ""), verb="deny", clicker=clicker,
                             card=MessageRef(address=address, message_id=post_id),
                             reason=reason if isinstance(reason, str) else None,
                             logical_id=f"{address.room_key}:reason:{post_id}:{state.get('trigger_id') or user_id}",
                             raw=payload)

    def _addressed(self, event: Posted) -> Addressed | None:
        """A DM always; elsewhere only a mention of this bot or the webhook's trigger word, never `@channel`."""
        if event.channel_type == DIRECT:
            return "direct"
        me = self.identity
        if me is None or not me.user_id:
            return None
        if names(event.message, me.handle):
            return "mention"
        if me.user_id in event.mentions and not names_a_room(event.message):
            return "mention"
        if event.trigger_word and not names_a_room(event.trigger_word):
            return "mention"
        return None

    def _is_own(self, event: Posted) -> bool:
        me = self.identity
        if me is None:
            return False
        if me.user_id:
            return event.user_id == me.user_id
        return bool(me.handle) and event.sender_name.lower() == f"@{me.handle}".lower()

    def verify(self, route: WebhookRoute, headers: Mapping[str, str], body: bytes) -> None:
        """A button call (`actions`) carries our HMAC in its context; an outgoing webhook call, the token the
        operator pasted. Both credentials travel inside the body, so it is read bounded (`adapters/wire.py`)."""
        if route == "commands":
            self._slash.verify(headers)
            return
        if route == "actions":
            try:
                click = read_json_object(body, "button call")
            except MalformedPayload as exc:
                raise VerificationError(f"{exc}; a button call is a JSON object with a signed context") from None
            if is_submission(click):
                check_submission(click, self._action_key)
                return
            if not is_click(click):
                raise VerificationError("not an interactive button call with a signed context")
            check_click(click, self._action_key)
            return
        if not self._webhook_token:
            raise VerificationError(f"bot {self.bot_id!r} has no webhook_token; every outgoing webhook call is refused")
        try:
            given = read_webhook_fields(headers, body).get("token", "")
        except MalformedPayload:
            given = ""
        if not hmac.compare_digest(given.encode(), self._webhook_token.encode()):
            raise VerificationError("missing or wrong outgoing webhook token")

    async def read_webhook(self, route: WebhookRoute, headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
        """A verified button call (`actions`), or the `posted` event rebuilt for an outgoing webhook call (`webhook`).

        Raises:
            MalformedPayload: the body is not what the route takes, or names a post the bot cannot read.
            WebhookAnswer: the bot is not a member of the post's channel; the answer's `text` says so there.
        """
        if route == "actions":
            return await self._click_event(read_json_object(body, "button call"))
        if route == "commands":
            return await self._slash_event(read_webhook_fields(headers, body))
        if route != "webhook":
            raise MalformedPayload(f"mattermost takes no {route} calls")
        try:
            return await self._posted_event(read_webhook_fields(headers, body))
        except NotInChannel as exc:
            raise WebhookAnswer({"text": str(exc)}, str(exc)) from None

    async def _slash_event(self, fields: Mapping[str, str]) -> dict[str, Any]:
        """A slash command call, with its channel's type (a DM or not), which the call does not carry."""
        channel_id = fields.get("channel_id", "")
        if not channel_id:
            raise MalformedPayload("slash command call without a channel_id")
        try:
            channel_type = await self._channel_type(channel_id)
        except Exception as exc:
            if status_of(exc) in REFUSED:
                raise MalformedPayload(f"slash command call from channel {channel_id!r}, which mattermost answered "
                                       f"with {status_of(exc)}") from None
            raise
        return {"event": SLASH_EVENT, "data": {**fields, "channel_type": channel_type}}

    async def _posted_event(self, fields: Mapping[str, str]) -> dict[str, Any]:
        """The outgoing webhook names the post but not its thread: the event is rebuilt from the post."""
        post_id, channel_id = fields.get("post_id", ""), fields.get("channel_id", "")
        if not post_id or not channel_id:
            raise MalformedPayload("outgoing webhook call without post_id or channel_id")
        await self._require_member(channel_id, fields.get("channel_name") or channel_id)
        try:
            post = await self._api.post(post_id)
            channel_type = await self._channel_type(channel_id)
        except Exception as exc:
            if status_of(exc) in REFUSED:  # the call names a post or channel the server will never show the bot
                raise MalformedPayload(f"outgoing webhook call names post {post_id!r} in channel {channel_id!r}, "
                                       f"which mattermost answered with {status_of(exc)}") from None
            raise
        if not is_object(post) or post.get("channel_id") != channel_id:  # the server's answer is untrusted too
            raise MalformedPayload(f"outgoing webhook call names post {post_id!r}, not in channel {channel_id!r}")
        me = self.identity
        mentioned = me is not None and names(str(post.get("message") or ""), me.handle)
        return posted_event(post, channel_type=channel_type,
                            sender_name=f"@{fields['user_name']}" if fields.get("user_name") else "",
                            mentions=[me.user_id] if me and mentioned else [],
                            trigger_word=fields.get("trigger_word", ""))

    async def _click_event(self, click: dict[str, Any]) -> dict[str, Any]:
        """A verified button call, as the parser reads it, with the clicker's full name (the call names only
        the username)."""
        user_id = str(click.get("user_id") or "")
        try:
            user = (await self._people.users([user_id])).get(user_id, {}) if user_id else {}
            name = display_name(user) if user else ""
        except Exception as exc:  # the click stands without the name; the username names the clicker
            log.warning("mattermost bot %r could not look up clicker %s: %s", self.bot_id, user_id, exc)
            user, name = {}, ""
        handle = user.get("username") if is_submission(click) else None  # a dialog's call names nobody but the id
        return {**click, **({CLICKER_NAME: name} if name else {}),
                **({CLICKER_HANDLE: handle} if isinstance(handle, str) and handle else {})}

    # -- to the wire ---------------------------------------------------------------------------------

    def address_of(self, chat: str, thread: str | None) -> ChatAddress | None:
        """A channel id does not say whether it is a DM: a post no message asked for treats it as a room (the
        room's memory, never a person's)."""
        return ChatAddress(bot_id=self.bot_id, platform="mattermost", channel_id=chat, thread_id=thread)

    async def send(self, address: ChatAddress, text: str) -> MessageRef:
        return await self._create(address, text, pending_post_id="")

    async def send_once(self, address: ChatAddress, text: str, *, key: str) -> MessageRef:
        """Mattermost returns the post a `pending_post_id` made when it sees the id again within 30 seconds
        (`deduplicateCreatePost` in mattermost-server `app/post.go`); the id is server-wide, so it names the bot."""
        return await self._create(address, text, pending_post_id=self._pending_id(key))

    def _pending_id(self, key: str) -> str:
        me = self.identity.user_id if self.identity else self.bot_id
        digest = hashlib.sha256(f"{me}:{key}".encode()).digest()
        return base64.b32encode(digest).decode().lower()[:26]

    async def find_own_post(self, address: ChatAddress, text: str, *, after: str) -> MessageRef | None:
        """Reads the channel's posts since post `after`: the bot's own in the same thread reading `text`."""
        me = self.identity.user_id if self.identity else None
        if not me:
            return None
        since = int((await self._api.post(after)).get("create_at") or 0)
        posts = posts_of(await self._api.channel_posts_since(address.channel_id, since))
        own = [p for p in posts if p.get("user_id") == me and p.get("message") == text and not p.get("delete_at")
               and (p.get("root_id") or None) == address.thread_id and int(p.get("create_at") or 0) > since]
        newest = max(own, key=lambda p: int(p.get("create_at") or 0), default=None)
        return MessageRef(address=address, message_id=str(newest["id"])) if newest else None

    async def _create(self, address: ChatAddress, text: str, *, pending_post_id: str) -> MessageRef:
        try:
            post = await self._api.create_post(address.channel_id, text, address.thread_id or "",
                                               pending_post_id=pending_post_id)
        except Exception as exc:
            if status_of(exc) == 403:
                raise NotInChannel(self._not_a_member(address.channel_id)) from None
            raise
        return MessageRef(address=address, message_id=str(post["id"]))

    async def post_file(self, address: ChatAddress, file: OutgoingFile) -> str:
        """`POST /files` into the channel, then a post in the thread naming it in `file_ids` (with the file's
        `key` as `pending_post_id`, so a post retried within the server's window is not doubled)."""
        try:
            info = await self._api.upload_file(address.channel_id, file.name, file.data, file.mime_type)
        except Exception as exc:
            if status_of(exc) == 413:
                raise FileUnreadable(f"{file.name} is larger than this Mattermost server takes "
                                     "(FileSettings.MaxFileSize)") from None
            if status_of(exc) == 403:
                raise NotInChannel(self._not_a_member(address.channel_id)) from None
            raise
        pending = self._pending_id(file.key) if file.key else ""
        post = await self._api.create_post(address.channel_id, file.caption or "", address.thread_id or "",
                                           pending_post_id=pending, file_ids=[str(info["id"])])
        return str(post["id"])

    async def fetch_file(self, file: FileRef, *, max_bytes: int) -> bytes:
        """`GET /files/{id}` with the bot's token: it reads the files of channels it is a member of.

        The body is the file whatever content type it comes with (a `.json` file is served as `application/json`).
        """
        if file.size is not None and file.size > max_bytes:
            raise FileUnreadable(too_large(file.name, file.size, max_bytes))
        if not FILE_ID.fullmatch(file.file_id):  # it goes into the request's path
            raise FileUnreadable(f"{file.name}: the post names it by {file.file_id[:40]!r}, not a Mattermost file id")
        try:
            data = await self._api.file_content(file.file_id)
        except Exception as exc:
            raise FileUnreadable(_download_failure(file.name, exc)) from None
        if len(data) > max_bytes:
            raise FileUnreadable(too_large(file.name, len(data), max_bytes))
        return data

    async def edit(self, ref: MessageRef, text: str) -> None:
        """The whole post (`PUT`): a live reply's Stop button goes with its props."""
        await self._api.replace_post(ref.message_id, text)

    async def send_live(self, address: ChatAddress, text: str) -> MessageRef:
        """A post with a Stop button (none without `server.public_url` for Mattermost to call)."""
        props = self._stop_props(address)
        post = await self._api.create_post(address.channel_id, text, address.thread_id or "", props)
        return MessageRef(address=address, message_id=str(post["id"]))

    async def edit_live(self, ref: MessageRef, text: str) -> None:
        await self._api.replace_post(ref.message_id, text, self._stop_props(ref.address))

    def _stop_props(self, address: ChatAddress) -> dict[str, Any] | None:
        if self._action_url is None or self._action_key is None:
            return None
        return stop_props(address, url=self._action_url, key=self._action_key)

    async def send_rated(self, address: ChatAddress, text: str, *, run_id: int) -> MessageRef:
        post = await self._api.create_post(address.channel_id, text, address.thread_id or "",
                                           self._feedback(address, run_id))
        return MessageRef(address=address, message_id=str(post["id"]))

    async def edit_rated(self, ref: MessageRef, text: str, *, run_id: int) -> None:
        await self._api.replace_post(ref.message_id, text, self._feedback(ref.address, run_id))

    def _feedback(self, address: ChatAddress, run_id: int) -> dict[str, Any] | None:
        """The 👍 / 👎 props; None (a plain answer) without `server.public_url` for Mattermost to call."""
        if self._action_url is None or self._action_key is None:
            return None
        return feedback_props(run_id, address, url=self._action_url, key=self._action_key)

    async def post_approval(self, address: ChatAddress, card: ApprovalCard) -> MessageRef:
        """The card with Approve and Deny buttons; without `server.public_url` it can only expire, and says so."""
        text, props = self._card(address, card)
        post = await self._api.create_post(address.channel_id, text, address.thread_id or "", props)
        return MessageRef(address=address, message_id=str(post["id"]))

    async def update_approval(self, ref: MessageRef, state: ApprovalCard | ApprovalOutcome) -> None:
        if isinstance(state, ApprovalCard):
            await self._api.replace_post(ref.message_id, *self._card(ref.address, state))
        else:
            await self._api.replace_post(ref.message_id, state.summary)  # the whole post: the buttons go

    def _card(self, address: ChatAddress, card: ApprovalCard) -> tuple[str, dict[str, Any] | None]:
        """The card's message and the props that carry its buttons (None: no buttons)."""
        if self._action_url is None or self._action_key is None:
            log.warning("mattermost bot %r posted an approval card without buttons: set server.public_url so "
                        "Mattermost can call back", self.bot_id)
            return (f"{card.summary}\n\n_No buttons: this gateway has no `server.public_url` for Mattermost to "
                    "call._"), None
        return card.summary, approval_props(card, address, url=self._action_url, key=self._action_key)

    async def post_question(self, address: ChatAddress, card: QuestionCard) -> MessageRef:
        assert self._action_url is not None and self._action_key is not None  # else `choice_buttons` is 0
        props = question_props(card, address, url=self._action_url, key=self._action_key)
        post = await self._api.create_post(address.channel_id, card.text, address.thread_id or "", props)
        return MessageRef(address=address, message_id=str(post["id"]))

    async def close_question(self, ref: MessageRef, text: str) -> None:
        await self._api.replace_post(ref.message_id, text)  # the whole post: the buttons go

    async def answer_click(self, click: ApprovalClick, notice: str, *, refused: bool = False) -> None:
        """An ephemeral post only the clicker sees, in the card's thread."""
        card = click.card.address
        await self._api.ephemeral_post(click.clicker.platform_user_id, card.channel_id, card.thread_id or "",
                                       f":no_entry_sign: {notice}" if refused else notice)

    async def ask_reason(self, click: ApprovalClick, card: ApprovalCard) -> MessageRef | None:
        """An interactive dialog for the clicker (`POST /actions/dialogs/open` with the click's `trigger_id`); the
        server sends its submission to the same URL the buttons call."""
        clicked = read_click(click.raw)
        if clicked is None or self._action_url is None or self._action_key is None:
            raise RuntimeError("a reason dialog needs the click that asked for it and server.public_url")
        await self._api.open_dialog(clicked.trigger_id, self._action_url,
                                    reason_dialog(card, clicked, key=self._action_key))
        return None

    async def show_typing(self, address: ChatAddress) -> None:
        if self.identity and self.identity.user_id:
            await self._api.typing(self.identity.user_id, address.channel_id, address.thread_id or "")

    async def read_thread(self, address: ChatAddress, *, limit: int) -> list[HistoryItem]:
        """The thread's posts, oldest first, the newest `limit` of them."""
        if not address.thread_id or limit <= 0:
            return []
        thread = await self._api.thread(address.thread_id)
        readable = (p for p in posts_of(thread) if not p.get("type") and not p.get("delete_at"))
        posts = sorted(readable, key=lambda p: p.get("create_at") or 0)[-limit:]
        speakers = await self._people.speakers(str(p["user_id"]) for p in posts)
        return [HistoryItem(speaker=speakers[str(p["user_id"])], text=str(p.get("message") or ""),
                            message_id=str(p["id"])) for p in posts]

    # -- the event stream ----------------------------------------------------------------------------

    async def _missed_events(self, since: float) -> list[dict[str, Any]]:
        """The `posted` events of every post made in the bot's channels since `since` (wall-clock seconds)."""
        since_ms = int(since * 1000)
        posts: list[Mapping[str, Any]] = []
        for channel_id in await self._my_channel_ids():
            answer = await self._api.channel_posts_since(channel_id, since_ms)
            posts.extend(p for p in posts_of(answer) if integer(p.get("create_at")) >= since_ms)
        if not posts:
            return []
        me = self.identity or BotIdentity(user_id="", handle=None, display_name="")
        users = await self._people.users(str(p.get("user_id")) for p in posts)
        return replayed_events(posts, channel_types=self._channel_types,
                               usernames={uid: str(u.get("username") or "") for uid, u in users.items()},
                               bot_user_id=me.user_id, bot_handle=me.handle)

    async def _my_channel_ids(self) -> list[str]:
        channels: dict[str, str] = {}
        for team in await self._api.my_teams():
            for channel in await self._api.my_channels(str(team["id"])):
                channels[str(channel["id"])] = str(channel.get("type") or "")
        self._channel_types.update(channels)
        self._members_of.update(channels)
        return list(channels)

    # -- look-ups ------------------------------------------------------------------------------------

    async def _channel_type(self, channel_id: str) -> str:
        if channel_id not in self._channel_types:
            channel = await self._api.channel(channel_id)
            self._channel_types[channel_id] = str(channel.get("type") or "")
        return self._channel_types[channel_id]

    async def _require_member(self, channel_id: str, channel_name: str) -> None:
        if channel_id in self._members_of:
            return
        if channel_id not in await self._my_channel_ids():
            message = self._not_a_member(channel_name)
            log.error("mattermost bot %r: %s", self.bot_id, message)
            raise NotInChannel(message)

    def _not_a_member(self, channel: str) -> str:
        handle = self.identity.handle if self.identity and self.identity.handle else "the bot"
        return (f"the bot account @{handle.lstrip('@')} is not a member of channel {channel!r}; add it with "
                f"`/invite @{handle.lstrip('@')}` in that channel")

