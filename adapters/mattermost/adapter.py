"""Mattermost over mattermostdriver: the WebSocket event stream or the outgoing webhook, one parser.

Every transport hands `parse` the WebSocket's `posted` event: the outgoing webhook and the catch-up
after a reconnect rebuild it from REST posts (`adapters/mattermost/events.py`). A channel post is the
root of its own thread unless it is a reply, so a top-level mention is answered in a thread under it
and `thread_id` is the root post id on both transports. Markdown is sent as is: Mattermost renders it.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from websockets.exceptions import ConnectionClosedOK

from adapters.base import (
    Addressed,
    ApprovalCard,
    ApprovalClick,
    ApprovalOutcome,
    BotIdentity,
    ChatAddress,
    Deliver,
    HistoryItem,
    Inbound,
    MalformedPayload,
    MessageRef,
    PlatformConfigError,
    PlatformLimits,
    Speaker,
    VerificationError,
)
from adapters.mattermost.buttons import approval_props, check_click, is_click, read_click
from adapters.mattermost.directory import MattermostDirectory
from adapters.mattermost.events import (
    DIRECT,
    POSTED,
    Posted,
    names,
    names_a_room,
    posted_event,
    read_posted,
    read_webhook_fields,
    replayed_events,
    without_address,
)
from adapters.mattermost.people import MattermostPeople, display_name
from adapters.mattermost.rest import MattermostApi, NotMattermost, status_of, websocket_url
from adapters.mattermost.socket import SocketRefused, event_stream
from adapters.unreachable import describe_unreachable

log = logging.getLogger(__name__)

POST_MAX_RUNES = 16_383
"""`PostMessageMaxRunesV2` in Mattermost's `server/public/model/post.go`."""
FRESH_START_WINDOW = 5 * 60.0
"""On a fresh start nothing says when the last connection ended: catch up on the last five minutes."""
CATCH_UP_MARGIN = 120.0
"""Read back this far before the last moment the stream was known alive: keepalive needs up to ~40 s to
notice a dead connection, and the server's clock may differ a little from ours. Dedupe absorbs the overlap."""
IDLE_TICK = 15.0


class NotInChannel(Exception):
    """The bot account cannot read or post in a channel; the message names the channel and the fix."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One finding of `MattermostAdapter.checkup`, in words an admin can act on."""

    ok: bool
    text: str


class MattermostAdapter:
    platform = "mattermost"
    follows_threads = True
    limits = PlatformLimits(max_text=16_000, max_edit_text=16_000)
    """A little under `POST_MAX_RUNES`, which counts code points as `len` does."""

    def __init__(self, *, bot_id: str, token: str, server_url: str, transport: str = "websocket",
                 webhook_token: str | None = None, team: str | None = None, action_url: str | None = None,
                 action_key: str | None = None) -> None:
        """`action_url` is where Mattermost sends approval button clicks (needs `server.public_url`);
        `action_key` signs each button's context."""
        self.bot_id = bot_id
        self._action_url = action_url
        self._action_key = action_key
        self.server_url = server_url
        self._token = token
        self._transport = transport
        self._webhook_token = webhook_token
        self._team = team
        self._api = MattermostApi(server_url=server_url, token=token)
        self._people = MattermostPeople(self._api, workspace=urlsplit(server_url).netloc)
        self.directory = MattermostDirectory(self._api, self._people, team=team)
        self.identity: BotIdentity | None = None
        self._seen_until: float | None = None
        """Wall-clock time up to which the event stream delivered everything; None before the first session."""
        self._channel_types: dict[str, str] = {}
        self._members_of: set[str] = set()

    @property
    def has_transport(self) -> bool:
        return self._transport == "websocket"

    async def open(self) -> BotIdentity:
        """Sign in, learn the bot's own id, and say in the log what is missing (a team, the id itself)."""
        me = await self.signed_in()
        user_id = str(me.get("id") or "")
        self.identity = BotIdentity(user_id=user_id, handle=me.get("username") or None,
                                    display_name=display_name(me))
        if not user_id:
            log.error("mattermost bot %r could not learn its own user id from GET /users/me; it answers direct "
                      "messages only until it can (mentions cannot be recognised without it)", self.bot_id)
        problem = self.team_problem(await self._api.my_teams())
        if problem:
            log.error("mattermost bot %r: %s", self.bot_id, problem)
        return self.identity

    async def close(self) -> None:
        """Nothing to release: the driver opens a connection per call."""

    async def signed_in(self) -> dict[str, Any]:
        """`GET /users/me`; raises `PlatformConfigError` when the token or the server URL is wrong."""
        try:
            return await self._api.me()
        except NotMattermost as exc:
            raise PlatformConfigError(f"bot {self.bot_id!r}: {self.server_url} does not answer like a Mattermost "
                                      f"server ({exc}); check api_base_url") from None
        except Exception as exc:
            if status_of(exc) == 401:
                raise PlatformConfigError(
                    f"mattermost at {self.server_url} refused the token of bot {self.bot_id!r} (401): use the bot "
                    "account's access token (Integrations > Bot Accounts), and check the account is active") from None
            raise

    def team_problem(self, teams: list[dict[str, Any]]) -> str | None:
        """What is wrong with the bot's team memberships, in words an admin can act on; None when fine."""
        team_names = [str(t.get("name")) for t in teams]
        if not teams:
            return ("the bot account is in no team, so it sees no channel (direct messages only); add it to a team "
                    "in System Console > User Management > Teams > Add Members")
        if self._team and not any(self._team in (t.get("name"), t.get("id"), t.get("display_name")) for t in teams):
            return (f"the bot account is not a member of team {self._team!r} (it is in {', '.join(team_names)}); "
                    f"add it in System Console > User Management > Teams > {self._team} > Add Members")
        return None

    async def checkup(self) -> list[Check]:
        """Connect and report what the bot account can do: token, id, team, channels, event stream, webhook."""
        try:
            me = await self.signed_in()
        except PlatformConfigError as exc:
            return [Check(ok=False, text=str(exc))]
        except Exception as exc:  # the doctor reports any failure to connect instead of raising it
            return [Check(ok=False, text=describe_unreachable(self.server_url, exc))]
        user_id = me.get("id")
        signed = (f"signed in as @{me.get('username')}, user id {user_id}" if user_id else
                  "signed in, but the server did not say the bot's user id: only direct messages would be answered")
        checks = [Check(ok=bool(user_id), text=signed)]
        teams = await self._api.my_teams()
        problem = self.team_problem(teams)
        checks.append(Check(ok=problem is None,
                            text=problem or f"member of team(s) {', '.join(str(t.get('name')) for t in teams)}"))
        kinds = [self._channel_types[c] for c in await self._my_channel_ids()]
        rooms = sum(kind in ("O", "P") for kind in kinds)
        checks.append(Check(ok=True, text=f"member of {rooms} channel(s) and {len(kinds) - rooms} direct or group "
                                          "conversation(s); invite it to a channel with `/invite @"
                                          f"{me.get('username')}`"))
        if self.has_transport:
            checks.append(await self._check_event_stream())
        if not self._webhook_token:
            checks.append(Check(ok=self.has_transport, text="no webhook_token: the outgoing webhook route "
                                                            "refuses every call"))
        return checks

    async def _check_event_stream(self) -> Check:
        url = websocket_url(self.server_url)
        try:
            async with event_stream(url, self._token):
                return Check(ok=True, text=f"event stream {url}: authenticated")
        except Exception as exc:  # reported, not raised: this is a diagnosis
            return Check(ok=False, text=f"event stream {url}: {type(exc).__name__}: {exc}")

    # -- from the wire -------------------------------------------------------------------------------

    def parse(self, payload: Mapping[str, Any]) -> Inbound | ApprovalClick | None:
        if is_click(payload):
            return self._parse_click(payload)
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

    def _parse_click(self, payload: Mapping[str, Any]) -> ApprovalClick | None:
        click = read_click(payload)
        if click is None:
            return None
        address = ChatAddress(bot_id=self.bot_id, platform="mattermost", channel_id=click.channel_id,
                              thread_id=click.thread_id, is_direct=click.is_direct)
        clicker = Speaker(platform="mattermost", platform_user_id=click.user_id, workspace=self._people.workspace,
                          handle=click.user_name or None, display_name=click.user_name or click.user_id)
        once = click.trigger_id or f"{click.user_id}:{click.verb}"
        return ApprovalClick(approval_id=click.approval_id, verb=click.verb, clicker=clicker,
                             card=MessageRef(address=address, message_id=click.post_id),
                             logical_id=f"{address.room_key}:click:{click.post_id}:{once}", raw=payload)

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

    def verify(self, headers: Mapping[str, str], body: bytes) -> None:
        """A button click carries our HMAC in its context; an outgoing webhook call, the token the operator pasted."""
        click = _json_object(body)
        if click is not None and is_click(click):
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

    async def webhook_event(self, headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
        """Rebuild the `posted` event for a verified outgoing webhook call, which names the post but not its thread.

        Raises:
            MalformedPayload: the body names no post.
            NotInChannel: the bot cannot read the post or is not a member of its channel.
        """
        if (click := _json_object(body)) is not None and is_click(click):
            raise MalformedPayload("a button click belongs on the actions route, not the outgoing webhook's")
        fields = read_webhook_fields(headers, body)
        post_id, channel_id = fields.get("post_id", ""), fields.get("channel_id", "")
        if not post_id or not channel_id:
            raise MalformedPayload("outgoing webhook call without post_id or channel_id")
        await self._require_member(channel_id, fields.get("channel_name") or channel_id)
        post = await self._api.post(post_id)
        me = self.identity
        mentioned = me is not None and names(str(post.get("message") or ""), me.handle)
        return posted_event(post, channel_type=await self._channel_type(channel_id),
                            sender_name=f"@{fields['user_name']}" if fields.get("user_name") else "",
                            mentions=[me.user_id] if me and mentioned else [],
                            trigger_word=fields.get("trigger_word", ""))

    def click_event(self, body: bytes) -> dict[str, Any]:
        """A verified button call, as the parser reads it. Raises `MalformedPayload` for anything else."""
        click = _json_object(body)
        if click is None or not is_click(click):
            raise MalformedPayload("not an interactive button call")
        return click

    # -- to the wire ---------------------------------------------------------------------------------

    async def send(self, address: ChatAddress, text: str) -> MessageRef:
        try:
            post = await self._api.create_post(address.channel_id, text, address.thread_id or "")
        except Exception as exc:
            if status_of(exc) == 403:
                raise NotInChannel(self._not_a_member(address.channel_id)) from None
            raise
        return MessageRef(address=address, message_id=str(post["id"]))

    async def edit(self, ref: MessageRef, text: str) -> None:
        await self._api.patch_post(ref.message_id, text)

    async def post_approval(self, address: ChatAddress, card: ApprovalCard) -> MessageRef:
        """The card with Approve and Deny buttons; without `server.public_url` it can only expire, and says so."""
        if self._action_url is None or self._action_key is None:
            log.warning("mattermost bot %r posted an approval card without buttons: set server.public_url so "
                        "Mattermost can call back", self.bot_id)
            text = f"{card.summary}\n\n_No buttons: this gateway has no `server.public_url` for Mattermost to call._"
            return await self.send(address, text)
        props = approval_props(card, address, url=self._action_url, key=self._action_key)
        post = await self._api.create_post(address.channel_id, card.summary, address.thread_id or "", props)
        return MessageRef(address=address, message_id=str(post["id"]))

    async def close_approval(self, ref: MessageRef, outcome: ApprovalOutcome) -> None:
        await self._api.replace_post(ref.message_id, outcome.summary)  # the whole post: the buttons go

    async def answer_click(self, click: ApprovalClick, notice: str, *, refused: bool = False) -> None:
        """An ephemeral post only the clicker sees, in the card's thread."""
        card = click.card.address
        await self._api.ephemeral_post(click.clicker.platform_user_id, card.channel_id, card.thread_id or "",
                                       f":no_entry_sign: {notice}" if refused else notice)

    async def show_typing(self, address: ChatAddress) -> None:
        if self.identity and self.identity.user_id:
            await self._api.typing(self.identity.user_id, address.channel_id, address.thread_id or "")

    async def read_thread(self, address: ChatAddress, *, limit: int) -> list[HistoryItem]:
        """The thread's posts, oldest first, the newest `limit` of them."""
        if not address.thread_id or limit <= 0:
            return []
        thread = await self._api.thread(address.thread_id)
        readable = (p for p in (thread.get("posts") or {}).values() if not p.get("type") and not p.get("delete_at"))
        posts = sorted(readable, key=lambda p: p.get("create_at") or 0)[-limit:]
        speakers = await self._people.speakers(str(p["user_id"]) for p in posts)
        return [HistoryItem(speaker=speakers[str(p["user_id"])], text=str(p.get("message") or ""),
                            message_id=str(p["id"])) for p in posts]

    # -- the event stream ----------------------------------------------------------------------------

    async def run_transport(self, deliver: Deliver) -> None:
        """Hold one event-stream session: authenticate, catch up on what was missed, then deliver live posts.

        Live events that arrive during the catch-up wait in the socket's queue; a post seen both ways is
        deduped by the inbox. The session ends when the server closes the stream (returns) or it fails.
        """
        try:
            async with event_stream(websocket_url(self.server_url), self._token) as stream:
                connected_at = time.time()
                await self._catch_up(deliver)
                self._seen_until = connected_at
                log.info("mattermost bot %r: event stream connected", self.bot_id)
                while True:
                    event = await stream.next_event(idle=IDLE_TICK)
                    if event is not None and event.get("event") == POSTED:
                        await deliver(event)
                    self._seen_until = time.time()
        except SocketRefused:
            await self.signed_in()  # a revoked token stops the bot here with a clear line; else retry
            raise
        except ConnectionClosedOK:
            log.info("mattermost closed the event stream of bot %r", self.bot_id)

    async def _catch_up(self, deliver: Deliver) -> None:
        """Feed the posts made while no stream was connected through `deliver` (dedupe makes repeats harmless).

        Reconnects within this process read back from the last moment the stream was alive; a fresh start
        reads back `FRESH_START_WINDOW`, since the last stream's end is not persisted.
        """
        now = time.time()
        since = now - FRESH_START_WINDOW if self._seen_until is None else self._seen_until - CATCH_UP_MARGIN
        since_ms = int(since * 1000)
        posts: list[dict[str, Any]] = []
        for channel_id in await self._my_channel_ids():
            answer = await self._api.channel_posts_since(channel_id, since_ms)
            posts.extend(p for p in (answer.get("posts") or {}).values() if (p.get("create_at") or 0) >= since_ms)
        if not posts:
            return
        me = self.identity or BotIdentity(user_id="", handle=None, display_name="")
        users = await self._people.users(str(p.get("user_id")) for p in posts)
        events = replayed_events(posts, channel_types=self._channel_types,
                                 usernames={uid: str(u.get("username") or "") for uid, u in users.items()},
                                 bot_user_id=me.user_id, bot_handle=me.handle)
        for event in events:
            await deliver(event)
        log.info("mattermost bot %r: read back %d post(s) from %.0f s before connecting", self.bot_id, len(events),
                 now - since)

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


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None
