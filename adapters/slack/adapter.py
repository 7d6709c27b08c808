"""Slack over slack-sdk: Socket Mode or the Events API, one parser for both; a thread is a conversation.

Rooms are `<team>:<channel>` and a message is its `ts`, so the `message` and `app_mention` events that
Slack sends for one post (with different event ids) are one logical message, `(team, channel, ts)`.
In channels, group DMs and private channels the bot answers in a thread: under the mention itself
when it was top-level, so a reply continues the same conversation. A DM is one conversation, and a
thread inside a DM its own.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import time
from collections import deque
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, Literal, get_args
from urllib.parse import parse_qs

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from adapters.base import (
    FEEDBACK_VERBS,
    REASON_LIMIT,
    Addressed,
    ApiTrouble,
    ApprovalCard,
    ApprovalClick,
    ApprovalOutcome,
    BotIdentity,
    ChatAddress,
    FileRef,
    FileUnreadable,
    HistoryItem,
    Inbound,
    MalformedPayload,
    MessageRef,
    OutgoingFile,
    Platform,
    PlatformConfigError,
    PlatformLimits,
    QuestionCard,
    Speaker,
    Verb,
    VerificationError,
    too_large,
)
from adapters.protocols import WebhookAnswer, WebhookRoute
from adapters.slack.assistant import AssistantWelcome, SlackStreams, welcome
from adapters.slack.directory import PERSON_SUBTYPES, SlackDirectory, channel, is_words, speaker_of
from adapters.slack.manifest import SLASH_PREFIX
from adapters.slack.markup import compact_entities, parse_slack_text, render_slack_mrkdwn
from adapters.slack.people import People, SlackPerson, people_of
from adapters.slack.socket import SocketMode
from adapters.slack.web import SlackAnswer, SlackWebApi, next_cursor, refusal_answer
from adapters.wire import (
    file_ref,
    is_array,
    is_object,
    objects_in,
    optional_text_id,
    read_json_object,
    refuse_unreadable,
    text_id,
)

log = logging.getLogger(__name__)

DEFAULT_API = "https://slack.com"
SIGNATURE_WINDOW = 5 * 60
"""Seconds a signed request stays acceptable (Slack's own advice)."""
TIMESTAMP_DIGITS = 12
"""Digits an `X-Slack-Request-Timestamp` may have: Unix seconds, with room to spare."""
PIECE_LIMIT = 3_900
"""Markdown characters per message: `chat.update` refuses text past about 4,000 characters, so every
piece is kept below that, with room for the `&amp;`-style escapes rendering adds."""
TEXT_CAP = 4_000
"""Characters of rendered text per message. `chat.postMessage` is documented to take 40,000, but
reports of `msg_too_long` past 4,000 abound, and `chat.update` enforces it: both keep to it."""
MAX_RETRY_AFTER = 60.0
RATE_LIMIT_RETRIES = 5
THREAD_PAGE = 200
THREAD_PAGES = 10
"""`conversations.replies` reads the oldest replies first; this many pages at most are read to reach the newest."""
AUTH_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
                         "not_allowed_token_type", "missing_scope", "no_permission"})
APPROVAL_ACTIONS: dict[str, Verb] = {f"approval:{verb}": verb for verb in get_args(Verb) if verb != "choose"}
CHOICE_ACTION = "question:"
"""A question's option buttons: `question:<position>` (an action id is unique within its block), valued
`<question>:<position>`."""
FEEDBACK_ACTION = "feedback"
"""The `action_id` of the feedback block under an answer; the pressed button's `value` is `verb:run id`."""
REASON_VIEW = "approval:reason"
"""The `callback_id` of the modal that takes a reason for denying; its submission is a denial with that reason."""
FORM_FIELDS = 20
"""Fields an interactivity form may have; Slack sends one, `payload`."""
SECTION_LIMIT = 3_000
"""Characters a Block Kit `section` text may carry."""
MAX_FILE_BYTES = 2**30
"""Slack takes files up to 1 GB (https://docs.slack.dev/messaging/working-with-files)."""
DOWNLOAD_CHUNK = 64 * 1024
STATUS_LASTS = 100.0
"""Seconds between two status lines for one waiting message: Slack drops a status after two minutes without a
post."""
STREAM_FALLBACK = "…"
"""What a reply's message shows first where it cannot stream (the live reply's placeholder)."""
SEEN_EMOJI = "👀"
REACTION_NAMES = {SEEN_EMOJI: "eyes"}
"""Slack names a reaction by its short name, not the emoji; the one reaction the bot puts, and takes away."""


class SlackAdapter:
    """A Slack bot: Socket Mode (`transport`), or the Events API calling its webhook routes.

    It has no `show_typing`: what a bot is doing shows in the status line under a thread (`set_status`, with
    `chat:write`, in channel threads as in assistant threads), and a reply streams into its message
    (`open_stream`, `adapters/slack/assistant.py`).
    """

    platform: Platform = "slack"
    limits = PlatformLimits(max_text=PIECE_LIMIT, max_edit_text=PIECE_LIMIT, max_file_bytes=MAX_FILE_BYTES)
    status_lasts = STATUS_LASTS
    choice_buttons = 25
    """The elements one actions block holds."""

    def __init__(self, *, bot_id: str, token: str, transport: Literal["socket", "http"] = "socket",
                 app_token: str | None = None, signing_secret: str | None = None,
                 api_base_url: str | None = None, allow_bots: bool = False,
                 on_api_trouble: ApiTrouble | None = None, greeting: AssistantWelcome | None = None,
                 reacts: bool = False) -> None:
        """`greeting`: the title and suggested prompts a new assistant thread shows (`binding.title`,
        `binding.suggested_prompts`). `reacts`: the binding's `reaction`, 👀 on a person's message as the first sign
        where no status line shows (a top-level DM waiting for its turn), and on every message it answers in a
        channel."""
        self.bot_id = bot_id
        self.reacts = reacts
        self._greeting = greeting or AssistantWelcome()
        self._on_api_trouble = on_api_trouble
        self._app_token = app_token
        self._signing_secret = signing_secret
        self._allow_bots = allow_bots
        base = f"{(api_base_url or DEFAULT_API).rstrip('/')}/api/"
        # Only 429 is retried, as Slack asks: a post retried after a lost answer would be a double post.
        self._client: SlackWebApi = AsyncWebClient(token=token, base_url=base,
                                                   retry_handlers=[_RetryAfter(bot_id, on_api_trouble)])
        self._session: aiohttp.ClientSession | None = None
        self._people = People(self._user)
        self._streams = SlackStreams(self._client, self._call)
        self._team_id = ""
        self._bot_app_id: str | None = None
        self.identity: BotIdentity | None = None
        self.directory = SlackDirectory(self._client, self._people, team=lambda: self._team_id,
                                        me=lambda: self.identity)
        self.transport: SocketMode | None = None
        if transport == "socket":
            self.transport = SocketMode(bot_id=bot_id, connect=self._socket_url, session=self._live_session,
                                        annotate=self.annotate)

    async def open(self) -> BotIdentity:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
            self._client.session = self._session
        auth = await self._call("auth.test", self._client.auth_test(), setting="token")
        self._team_id = str(auth.get("team_id") or "")
        self._bot_app_id = auth.get("bot_id")
        handle = auth.get("user")
        self.identity = BotIdentity(user_id=str(auth["user_id"]), handle=handle, display_name=handle or auth["user_id"])
        return self.identity

    def _live_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            raise RuntimeError(f"slack bot {self.bot_id!r} used its connection before open()")
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    # -- from the wire -------------------------------------------------------------------------------

    def parse(self, payload: Mapping[str, Any]) -> Inbound | ApprovalClick | None:
        """An Events API callback, a `block_actions` click or a slash command, as sent over either transport."""
        refuse_unreadable(payload)
        kind = payload.get("type")
        try:
            if kind == "block_actions":
                return self._parse_click(payload)
            if kind == "view_submission":
                return self._parse_reason(payload)
            if kind is None and "command" in payload:
                return self._parse_slash(payload)
            if kind != "event_callback":
                return None
            event = payload.get("event")
            if not is_object(event):
                raise MalformedPayload("slack event_callback without an event object")
            if event.get("type") not in ("message", "app_mention") or not self._is_message(event):
                return None
            return self._parse_message(payload, event)
        except (KeyError, TypeError, AttributeError) as exc:
            raise MalformedPayload(f"slack {kind} payload is missing or mistyped: {exc!r}") from None

    def _is_message(self, event: Mapping[str, Any]) -> bool:
        subtype = event.get("subtype")
        if subtype == "bot_message":
            return self._allow_bots
        return subtype in PERSON_SUBTYPES and not event.get("hidden")

    def _parse_message(self, payload: Mapping[str, Any], event: Mapping[str, Any]) -> Inbound | None:
        me = self._me()
        sender = event.get("user") or event.get("bot_id")
        if sender is not None and not isinstance(sender, str):
            raise MalformedPayload(f"slack message event whose sender is a {type(sender).__name__}")
        if sender is None or sender == me.user_id or (
                event.get("bot_id") and event.get("bot_id") == self._bot_app_id):
            return None
        people = people_of(payload)
        person = people.get(sender)
        # Either twin must say "bot" alike, and an app_mention may lack bot_id: users.info tells as well.
        is_bot = bool(event.get("bot_id")) or event.get("subtype") == "bot_message" or bool(person and person.is_bot)
        text = str(event.get("text") or "")
        address = self._address(payload, text_id(event.get("channel"), "slack event.channel"),
                                text_id(event.get("ts"), "slack event.ts"),
                                optional_text_id(event.get("thread_ts"), "slack event.thread_ts"),
                                event.get("channel_type"))
        mentioned = event["type"] == "app_mention" or _mentions(text, me.user_id)
        addressed: Addressed | None = "mention" if mentioned else "direct" if address.is_direct else None
        if is_bot and not (self._allow_bots and mentioned):
            return None  # another bot is answered only when it names this bot: no loops through threads
        names = {user_id: known.display_name for user_id, known in people.items()}
        speaker = speaker_of(sender, person, event, workspace=_room_team(address), is_bot=is_bot)
        return Inbound(address=address, speaker=speaker, message_id=str(event["ts"]), addressed=addressed,
                       text=parse_slack_text(text, names=names, drop_user=me.user_id),
                       attachments=_attachments(event), raw=payload)

    def _parse_slash(self, payload: Mapping[str, Any]) -> Inbound | None:
        """A slash command (https://docs.slack.dev/interactivity/implementing-slash-commands): the person's words as
        the command's word and its text, said where they typed it. Slack sends no message `ts` (the command is not
        a message; it is never typed inside a thread), so its `trigger_id` names it, once."""
        command, text = text_id(payload.get("command"), "slack command"), str(payload.get("text") or "")
        user = text_id(payload.get("user_id"), "slack command user_id")
        channel_id = text_id(payload.get("channel_id"), "slack command channel_id")
        trigger = text_id(payload.get("trigger_id"), "slack command trigger_id")
        team = optional_text_id(payload.get("team_id"), "slack command team_id") or self._team_id
        if user == self._me().user_id:
            return None
        word = slash_word(command)
        address = ChatAddress(bot_id=self.bot_id, platform="slack", channel_id=f"{team}:{channel_id}",
                              is_direct=channel_id.startswith("D"))
        speaker = speaker_of(user, people_of(payload).get(user), {"username": payload.get("user_name")},
                             workspace=team)
        return Inbound(address=address, speaker=speaker, text=f"{word} {text}".strip(), message_id=f"slash:{trigger}",
                       addressed="command", raw=payload)

    def _address(self, payload: Mapping[str, Any], channel: str, ts: str, thread_ts: Any,
                 channel_type: Any) -> ChatAddress:
        """A DM thread only when the person wrote in one; elsewhere always a thread, rooted at `ts` if need be."""
        team = optional_text_id(payload.get("team_id"), "slack team_id") or _team(payload) or self._team_id
        direct = channel_type == "im" or (channel_type is None and channel.startswith("D"))
        thread = str(thread_ts) if thread_ts else None
        return ChatAddress(bot_id=self.bot_id, platform="slack", channel_id=f"{team}:{channel}",
                           thread_id=thread if direct else thread or ts, is_direct=direct)

    def _parse_click(self, payload: Mapping[str, Any]) -> ApprovalClick | None:
        # The shapes Slack documents; a payload of other shapes fails in `parse` as mistyped.
        listed: Iterable[Any] = payload.get("actions") or []
        actions = [a for a in listed if a.get("action_id") in APPROVAL_ACTIONS
                   or str(a.get("action_id") or "").startswith(CHOICE_ACTION) or _feedback_verb(a) is not None]
        user: Mapping[str, Any] = payload.get("user") or {}
        channel: Mapping[str, Any] = payload.get("channel") or {}
        container: Mapping[str, Any] = payload.get("container") or {}
        message: Mapping[str, Any] = payload.get("message") or {}
        if not actions or not user.get("id") or not channel.get("id") or not container.get("message_ts"):
            return None
        action = actions[0]
        card_ts = text_id(container["message_ts"], "slack container.message_ts")
        thread_ts = optional_text_id(message.get("thread_ts") or container.get("thread_ts"), "slack thread_ts")
        address = self._address(payload, text_id(channel["id"], "slack channel.id"), card_ts, thread_ts, None)
        text_id(user["id"], "slack user.id")
        person = people_of(payload).get(user["id"])
        clicker = Speaker(platform="slack", platform_user_id=str(user["id"]), workspace=_room_team(address),
                          handle=user.get("username"),
                          display_name=person.display_name if person else str(user.get("name") or user["id"]))
        verb = _feedback_verb(action) or APPROVAL_ACTIONS.get(action["action_id"], "choose")
        value = str(action.get("value") or "")
        target, _, choice = value.partition(":")  # an option's `<question>:<position>`, a rating's `verb:run`
        approval_id = target if verb == "choose" else choice if verb in FEEDBACK_VERBS else value
        return ApprovalClick(approval_id=approval_id, verb=verb,
                             choice=int(choice) if verb == "choose" and choice.isdigit() else None,
                             clicker=clicker, card=MessageRef(address=address, message_id=card_ts),
                             logical_id=f"{address.room_key}:click:{action.get('action_ts') or card_ts}:{user['id']}",
                             raw=payload)

    def _parse_reason(self, payload: Mapping[str, Any]) -> ApprovalClick | None:
        """A submitted reason modal (`ask_reason`): a denial with the person's words. Only the person it was opened
        for can submit a modal, and its `private_metadata` is the app's own: it names the card and that person."""
        view: Mapping[str, Any] = payload.get("view") or {}
        user: Mapping[str, Any] = payload.get("user") or {}
        if view.get("callback_id") != REASON_VIEW or not user.get("id"):
            return None
        card = read_json_object(str(view.get("private_metadata") or ""), "slack view.private_metadata")
        clicker_id = text_id(user["id"], "slack user.id")
        if card.get("user") != clicker_id:
            return None  # a modal submitted by someone it was not opened for: nothing Slack would send
        address = self._address(payload, text_id(card.get("channel"), "slack reason channel"),
                                text_id(card.get("card"), "slack reason card"),
                                optional_text_id(card.get("thread"), "slack reason thread"), None)
        typed = _typed(view, "reason", "reason")
        person = people_of(payload).get(clicker_id)
        clicker = Speaker(platform="slack", platform_user_id=clicker_id, workspace=_room_team(address),
                          handle=user.get("username"),
                          display_name=person.display_name if person else str(user.get("name") or clicker_id))
        return ApprovalClick(approval_id=str(card.get("approval") or ""), verb="deny", clicker=clicker,
                             card=MessageRef(address=address, message_id=str(card["card"])),
                             reason=typed,
                             logical_id=f"{address.room_key}:reason:{text_id(view.get('id'), 'slack view.id')}",
                             raw=payload)

    def _me(self) -> BotIdentity:
        if self.identity is None:
            raise RuntimeError(f"adapter for bot {self.bot_id!r} parsed a message before open()")
        return self.identity

    def verify(self, route: WebhookRoute, headers: Mapping[str, str], body: bytes) -> None:
        """Slack's `v0` signature of the raw body, within five minutes of its timestamp.

        The HMAC is taken over the bytes as they came (https://docs.slack.dev/authentication/verifying-requests-from-slack):
        slack-sdk's `SignatureVerifier` decodes the body as UTF-8 first, which fails on any other bytes.
        """
        if not self._signing_secret:
            raise VerificationError(f"slack bot {self.bot_id!r} has no signing_secret set; every Events API "
                                    "call is refused (set bots[].signing_secret to the app's Signing Secret)")
        given = {key.lower(): value for key, value in headers.items()}
        timestamp, signature = given.get("x-slack-request-timestamp"), given.get("x-slack-signature")
        if not timestamp or not signature:
            raise VerificationError("missing X-Slack-Signature or X-Slack-Request-Timestamp")
        if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= TIMESTAMP_DIGITS):
            raise VerificationError("X-Slack-Request-Timestamp is not a number")
        if abs(time.time() - int(timestamp)) > SIGNATURE_WINDOW:
            raise VerificationError("X-Slack-Request-Timestamp is more than five minutes away; stale or replayed")
        base = b"v0:" + timestamp.encode() + b":" + body
        expected = "v0=" + hmac.new(self._signing_secret.encode(), base, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", errors="replace")):
            raise VerificationError("X-Slack-Signature does not match the body")

    async def read_webhook(self, route: WebhookRoute, headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
        """The payload of a verified Events API or interactivity request, with the names of its people.

        Events arrive as JSON; button clicks as a form whose `payload` field is the JSON. Both routes
        take both, as one verified reader.

        Raises:
            WebhookAnswer: the request is Slack checking the URL; answered with its challenge.
            MalformedPayload: the body is neither.
        """
        if route not in ("events", "interactions", "commands"):
            raise MalformedPayload(f"slack takes no {route} calls")
        content_type = {key.lower(): value for key, value in headers.items()}.get("content-type", "")
        if content_type.startswith("application/x-www-form-urlencoded"):
            payload = _form_payload(body)
        else:
            payload = read_json_object(body, "body")
        if (challenge := url_verification_challenge(payload)) is not None:
            raise WebhookAnswer({"challenge": challenge}, "slack url_verification")
        return await self.annotate(payload)

    async def annotate(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The payload with the names of the people in it, which Slack sends only as ids (see `slack_people`).

        An assistant thread just opened is no message to store: it gets its title and suggested prompts here,
        before it is acknowledged (a redelivery sets them again, to the same)."""
        event = payload.get("event")
        if payload.get("type") == "event_callback" and is_object(event) \
                and event.get("type") == "assistant_thread_started":
            try:
                await welcome(self._client, self._call, event, self._greeting)
            except (SlackApiError, aiohttp.ClientError, TimeoutError, MalformedPayload) as exc:
                log.warning("slack bot %r could not greet an assistant thread: %s", self.bot_id, exc)
        me = [self.identity.user_id] if self.identity else []
        return await self._people.annotate(payload, skip=me)

    # -- to the wire ---------------------------------------------------------------------------------

    def address_of(self, chat: str, thread: str | None) -> ChatAddress | None:
        """A channel of the bot's own workspace (known once signed in); a `D…` channel is a DM."""
        if not self._team_id:
            return None
        return ChatAddress(bot_id=self.bot_id, platform="slack", channel_id=f"{self._team_id}:{chat}", thread_id=thread,
                           is_direct=chat.startswith("D"))

    async def send(self, address: ChatAddress, text: str) -> MessageRef:
        response = await self._call("chat.postMessage", self._client.chat_postMessage(
            channel=channel(address.channel_id), thread_ts=address.thread_id, text=self._fit(text, TEXT_CAP),
            unfurl_links=False, unfurl_media=False))
        return MessageRef(address=address, message_id=str(response["ts"]))

    async def edit(self, ref: MessageRef, text: str) -> None:
        """A streaming reply gets what is new appended; any other message (or a stream that cannot take the text)
        is edited with `chat.update`, its blocks emptied: a live reply's Stop button goes."""
        if await self._streams.append(ref, text):
            return
        await self._call("chat.update", self._client.chat_update(
            channel=channel(ref.address.channel_id), ts=ref.message_id, text=self._fit(text, TEXT_CAP), blocks=[]))

    async def send_live(self, address: ChatAddress, text: str) -> MessageRef:
        fitted = self._fit(text, TEXT_CAP)
        response = await self._call("chat.postMessage", self._client.chat_postMessage(
            channel=channel(address.channel_id), thread_ts=address.thread_id, text=fitted, blocks=_live_blocks(fitted),
            unfurl_links=False, unfurl_media=False))
        return MessageRef(address=address, message_id=str(response["ts"]))

    async def edit_live(self, ref: MessageRef, text: str) -> None:
        """The text with a Stop button below it. A native stream takes no blocks while it streams (`chat.appendStream`
        appends text only): it shows no button, and the word `stop` stops its turn."""
        if await self._streams.append(ref, text):
            return
        fitted = self._fit(text, TEXT_CAP)
        await self._call("chat.update", self._client.chat_update(
            channel=channel(ref.address.channel_id), ts=ref.message_id, text=fitted, blocks=_live_blocks(fitted)))

    async def open_stream(self, address: ChatAddress, recipient: Speaker) -> MessageRef:
        """An empty reply streaming in the thread (Markdown as Slack renders `markdown_text`), or a plain "…" post
        where a stream cannot be: outside threads, or refused lately."""
        if address.thread_id is not None and not self._streams.refused():
            ts = await self._streams.start(channel(address.channel_id), address.thread_id, recipient)
            if ts is not None:
                return MessageRef(address=address, message_id=ts)
        return await self.send(address, STREAM_FALLBACK)

    async def close_stream(self, ref: MessageRef, text: str) -> None:
        if not await self._streams.stop(ref, text):
            await self._call("chat.update", self._client.chat_update(
                channel=channel(ref.address.channel_id), ts=ref.message_id, text=self._fit(text, TEXT_CAP),
                blocks=[]))

    async def send_rated(self, address: ChatAddress, text: str, *, run_id: int) -> MessageRef:
        response = await self._call("chat.postMessage", self._client.chat_postMessage(
            channel=channel(address.channel_id), thread_ts=address.thread_id, text=self._fit(text, TEXT_CAP),
            blocks=[_markdown(text), _feedback_block(run_id)], unfurl_links=False, unfurl_media=False))
        return MessageRef(address=address, message_id=str(response["ts"]))

    async def edit_rated(self, ref: MessageRef, text: str, *, run_id: int) -> None:
        """A streaming reply stops with the feedback block at its foot (`chat.stopStream`'s `blocks`); any other
        message gets its text as a Markdown block with the feedback block under it."""
        if await self._streams.stop(ref, text, blocks=[_feedback_block(run_id)]):
            return
        await self._call("chat.update", self._client.chat_update(
            channel=channel(ref.address.channel_id), ts=ref.message_id, text=self._fit(text, TEXT_CAP),
            blocks=[_markdown(text), _feedback_block(run_id)]))

    async def react(self, ref: MessageRef, emoji: str) -> None:
        """`reactions.add` by the emoji's Slack name, or, for "", `reactions.remove` of the one the bot puts; a
        reaction already there, or already gone, is what was asked for."""
        name = REACTION_NAMES.get(emoji or SEEN_EMOJI)
        if name is None:
            raise ValueError(f"no Slack name for the reaction {emoji!r}")
        request = self._client.reactions_add if emoji else self._client.reactions_remove
        try:
            await self._call("reactions.add" if emoji else "reactions.remove", request(
                channel=channel(ref.address.channel_id), timestamp=ref.message_id, name=name))
        except SlackApiError as exc:
            if refusal_answer(exc).get("error") not in ("already_reacted", "no_reaction"):
                raise

    def shows_status(self, address: ChatAddress) -> bool:
        """A status line needs a thread: every conversation in a channel is one, a DM only when it is threaded."""
        return address.thread_id is not None

    async def set_status(self, address: ChatAddress, status: str) -> None:
        """`assistant.threads.setStatus` under the conversation's thread; the bot's next post there clears it."""
        assert address.thread_id is not None
        await self._call("assistant.threads.setStatus", self._client.assistant_threads_setStatus(
            channel_id=channel(address.channel_id), thread_ts=address.thread_id, status=status,
            loading_messages=[status] if status else None))

    async def post_approval(self, address: ChatAddress, card: ApprovalCard) -> MessageRef:
        text = render_slack_mrkdwn(card.summary)
        response = await self._call("chat.postMessage", self._client.chat_postMessage(
            channel=channel(address.channel_id), thread_ts=address.thread_id, text=text[:TEXT_CAP],
            blocks=_card_blocks(text, card)))
        return MessageRef(address=address, message_id=str(response["ts"]))

    async def update_approval(self, ref: MessageRef, state: ApprovalCard | ApprovalOutcome) -> None:
        """New blocks for the card: its buttons while pending, the outcome alone once decided."""
        text = render_slack_mrkdwn(state.summary)
        blocks = _card_blocks(text, state) if isinstance(state, ApprovalCard) else [_section(text)]
        await self._call("chat.update", self._client.chat_update(
            channel=channel(ref.address.channel_id), ts=ref.message_id, text=text[:TEXT_CAP], blocks=blocks))

    async def post_question(self, address: ChatAddress, card: QuestionCard) -> MessageRef:
        text = render_slack_mrkdwn(card.text)
        buttons = [_button(choice, f"{CHOICE_ACTION}{index}", f"{card.question_id}:{index}", None)
                   for index, choice in enumerate(card.choices)]
        response = await self._call("chat.postMessage", self._client.chat_postMessage(
            channel=channel(address.channel_id), thread_ts=address.thread_id, text=text[:TEXT_CAP],
            blocks=[_section(text), {"type": "actions", "block_id": f"question:{card.question_id}",
                                     "elements": buttons}]))
        return MessageRef(address=address, message_id=str(response["ts"]))

    async def close_question(self, ref: MessageRef, text: str) -> None:
        shown = render_slack_mrkdwn(text)
        await self._call("chat.update", self._client.chat_update(
            channel=channel(ref.address.channel_id), ts=ref.message_id, text=shown[:TEXT_CAP],
            blocks=[_section(shown)]))

    async def answer_click(self, click: ApprovalClick, notice: str, *, refused: bool = False) -> None:
        """An ephemeral message in the card's thread: only the person who clicked sees it."""
        address = click.card.address
        await self._call("chat.postEphemeral", self._client.chat_postEphemeral(
            channel=channel(address.channel_id), user=click.clicker.platform_user_id, thread_ts=address.thread_id,
            text=render_slack_mrkdwn(notice)[:TEXT_CAP]))

    async def ask_reason(self, click: ApprovalClick, card: ApprovalCard) -> MessageRef | None:
        """A modal for the clicker (`views.open` with the click's `trigger_id`, good for 3 seconds), whose submission
        comes back as a `view_submission`: over Socket Mode, or to the interactivity URL."""
        address = click.card.address
        metadata = {"approval": card.approval_id, "channel": channel(address.channel_id), "card": click.card.message_id,
                    "thread": address.thread_id, "user": click.clicker.platform_user_id}
        intro = f"Why deny `{card.tool_name}`? The agent reads your words as your reason."
        view = {"type": "modal", "callback_id": REASON_VIEW, "private_metadata": json.dumps(metadata),
                "title": {"type": "plain_text", "text": "Deny with a reason"},
                "submit": {"type": "plain_text", "text": "Deny"}, "close": {"type": "plain_text", "text": "Cancel"},
                "blocks": [_section(render_slack_mrkdwn(intro)),
                           {"type": "input", "block_id": "reason", "label": {"type": "plain_text", "text": "Reason"},
                            "element": {"type": "plain_text_input", "action_id": "reason", "multiline": True,
                                        "max_length": REASON_LIMIT}}]}
        await self._call("views.open", self._client.views_open(trigger_id=str(click.raw["trigger_id"]), view=view))
        return None

    async def post_file(self, address: ChatAddress, file: OutgoingFile) -> str:
        """`files.getUploadURLExternal`, the bytes to the upload URL, then `files.completeUploadExternal` into the
        thread (slack-sdk's `files_upload_v2`); needs the bot scope `files:write`. Returns the file's id."""
        comment = self._fit(file.caption, TEXT_CAP) if file.caption else None
        try:
            response = await self._call("files.completeUploadExternal", self._client.files_upload_v2(
                channel=channel(address.channel_id), thread_ts=address.thread_id, file=file.data,
                filename=file.name, title=file.name, initial_comment=comment), setting="token")
        except PlatformConfigError as exc:
            if "missing_scope" not in str(exc):
                raise
            log.error("%s", exc)
            raise FileUnreadable("this Slack app may not post files: it needs the files:write scope (the operator "
                                 "adds it and reinstalls the app)") from None
        uploaded: Mapping[str, Any] = response.get("file") or {}
        return str(uploaded.get("id") or "")

    async def fetch_file(self, file: FileRef, *, max_bytes: int) -> bytes:
        """`files.info` names the file's private URL, read with the bot token (scope `files:read`).

        Slack answers a token that may not read a file with a sign-in page and status 200, so anything that is
        not the file's own content type is refused rather than read as the file.
        """
        if file.size is not None and file.size > max_bytes:
            raise FileUnreadable(too_large(file.name, file.size, max_bytes))
        try:
            info = (await self._client.files_info(file=file.file_id))["file"]
        except SlackApiError as exc:
            error = refusal_answer(exc).get("error")
            if error == "missing_scope":
                raise FileUnreadable(f"{file.name}: this Slack app may not read files (it needs the files:read "
                                     "scope; the operator adds it and reinstalls the app)") from None
            raise FileUnreadable(f"{file.name}: Slack would not hand it to the bot ({error})") from None
        except (aiohttp.ClientConnectionError, TimeoutError):
            raise FileUnreadable(f"{file.name}: Slack did not answer files.info just now (sending it again may "
                                 "work)") from None
        if not is_object(info):
            raise FileUnreadable(f"{file.name}: Slack answered files.info without the file")
        url = info.get("url_private_download") or info.get("url_private")
        if not isinstance(url, str) or not url:
            raise FileUnreadable(f"{file.name}: Slack gave no download address for it (an external file?)")
        try:
            return await self._download(file, url, info.get("mimetype"), max_bytes)
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError):
            raise FileUnreadable(f"{file.name}: Slack did not answer the download just now (sending it again "
                                 "may work)") from None

    async def _download(self, file: FileRef, url: str, mimetype: Any, max_bytes: int) -> bytes:
        """The bytes at a file's private URL, whatever their content type, but for a sign-in page in its place."""
        async with self._live_session().get(url, headers={"Authorization": f"Bearer {self._client.token}"},
                                            allow_redirects=True) as answer:
            kind = answer.headers.get("Content-Type", "")
            if answer.status != 200 or (kind.startswith("text/html") and mimetype != "text/html"):
                raise FileUnreadable(f"{file.name}: Slack answered the download with {answer.status} "
                                     f"{kind or 'no content type'}, not the file: the bot may not read it")
            data = bytearray()
            async for chunk in answer.content.iter_chunked(DOWNLOAD_CHUNK):
                data += chunk
                if len(data) > max_bytes:
                    raise FileUnreadable(too_large(file.name, len(data), max_bytes))
        return bytes(data)

    async def read_thread(self, address: ChatAddress, *, limit: int) -> list[HistoryItem]:
        """The thread's first message and its newest replies, up to `limit` in all, oldest first."""
        if not address.thread_id or limit <= 0:
            return []
        try:
            messages = await self._thread(channel(address.channel_id), address.thread_id, limit)
        except SlackApiError as exc:
            log.warning("slack bot %r cannot read thread %s: %s", self.bot_id, address.thread_id,
                        refusal_answer(exc).get("error"))
            return []
        return await self.directory.history_items(messages)

    async def find_own_post(self, address: ChatAddress, text: str, *, after: str) -> MessageRef | None:
        """The first page of the thread (or, outside threads, the channel) since message `after`: the bot's
        own message there reading `text` as `send` renders it."""
        me = self.identity.user_id if self.identity else None
        if not me:
            return None
        room = channel(address.channel_id)
        if address.thread_id:
            page = await self._call("conversations.replies", self._client.conversations_replies(
                channel=room, ts=address.thread_id, oldest=after, limit=THREAD_PAGE))
        else:
            page = await self._call("conversations.history", self._client.conversations_history(
                channel=room, oldest=after, limit=THREAD_PAGE))
        # A streaming reply opened empty reads as no text until its first words.
        shown = {self._fit(text, TEXT_CAP)} | ({""} if text == STREAM_FALLBACK else set[str]())
        own = [m for m in objects_in(page.get("messages")) if m.get("user") == me and m.get("text") in shown
               and float(m.get("ts") or 0) > float(after) and (m.get("thread_ts") or None) == address.thread_id]
        newest = max(own, key=lambda m: float(m["ts"]), default=None)
        return MessageRef(address=address, message_id=str(newest["ts"])) if newest else None

    async def _thread(self, channel_id: str, thread_ts: str, limit: int) -> list[Mapping[str, Any]]:
        """`conversations.replies` pages oldest first, so the newest replies are the ones kept."""
        root: Mapping[str, Any] | None = None
        newest: deque[Mapping[str, Any]] = deque(maxlen=max(limit - 1, 0))
        cursor: str | None = None
        for _ in range(THREAD_PAGES):
            page = await self._call("conversations.replies", self._client.conversations_replies(
                channel=channel_id, ts=thread_ts, limit=THREAD_PAGE, cursor=cursor))
            for message in objects_in(page.get("messages")):
                if not is_words(message):
                    continue
                if root is None and message.get("ts") == thread_ts:
                    root = message
                else:
                    newest.append(message)
            cursor = next_cursor(page)
            if not cursor:
                break
        return ([root] if root is not None else []) + list(newest)

    def _fit(self, markdown: str, cap: int) -> str:
        """Render as mrkdwn within Slack's `cap`, trading entities for look-alikes, then cutting, as needed.

        Escapes make a piece longer than its Markdown; look-alike characters keep every word, and a cut
        (logged) is the last resort, for pieces such as wide tables.
        """
        text = render_slack_mrkdwn(markdown)
        if len(text) <= cap:
            return text
        text = compact_entities(text)
        if len(text) <= cap:
            return text
        log.warning("slack bot %r: a rendered message of %d characters was cut to %d", self.bot_id, len(text), cap)
        cut = text[: cap - 5]
        cut = cut.rsplit("\n", 1)[0] if "\n" in cut else cut
        return cut + ("\n```" if cut.count("```") % 2 else "") + " …"

    async def _user(self, user_id: str) -> SlackPerson | None:
        try:
            response = await self._client.users_info(user=user_id)
        except SlackApiError as exc:
            if refusal_answer(exc).get("error") in ("user_not_found", "user_not_visible"):
                return None
            raise
        user = response["user"]
        return SlackPerson.from_user(user) if is_object(user) else None

    async def _call(self, method: str, request: Awaitable[SlackAnswer], *, setting: str = "token") -> SlackAnswer:
        """Await one Web API call; a refused credential becomes a `PlatformConfigError` naming the setting.

        A failure is told to `on_api_trouble`; a 429 that outlasted the retries counts as `rate_limited`
        (the retried ones were told by `_RetryAfter`).
        """
        try:
            return await request
        except SlackApiError as exc:
            answer = refusal_answer(exc)
            if self._on_api_trouble is not None:
                self._on_api_trouble(method, "rate_limited" if answer.status_code == 429 else "error")
            error = answer.get("error")
            if error in AUTH_ERRORS:
                raise PlatformConfigError(f"slack refused {method} for bot {self.bot_id!r} ({error}); check "
                                          f"bots[].{setting} and the app's scopes") from None
            raise

    # -- transports ----------------------------------------------------------------------------------

    async def _socket_url(self) -> str:
        """A one-time Socket Mode URL, from `apps.connections.open` with the app-level token."""
        if not self._app_token:
            raise PlatformConfigError(f"slack bot {self.bot_id!r} uses Socket Mode but has no app_token "
                                      "(an app-level xapp- token with connections:write)")
        opened = await self._call("apps.connections.open",
                                  self._client.apps_connections_open(app_token=self._app_token), setting="app_token")
        return str(opened["url"])


class _RetryAfter(AsyncRetryHandler):
    """Retries a 429 after the `Retry-After` Slack sent (capped), on every Web API call, telling `on_api_trouble`."""

    def __init__(self, bot_id: str, on_api_trouble: ApiTrouble | None) -> None:
        super().__init__(max_retry_count=RATE_LIMIT_RETRIES)
        self._bot_id = bot_id
        self._on_api_trouble = on_api_trouble

    async def _can_retry_async(self, *, state: RetryState, request: HttpRequest,
                               response: HttpResponse | None = None, error: Exception | None = None) -> bool:
        return response is not None and response.status_code == 429

    async def prepare_for_next_attempt_async(self, *, state: RetryState, request: HttpRequest,
                                             response: HttpResponse | None = None,
                                             error: Exception | None = None) -> None:
        delay = min(_retry_after(response.headers if response else {}), MAX_RETRY_AFTER)
        method = request.url.split("?", 1)[0].rsplit("/", 1)[-1]
        if self._on_api_trouble is not None:
            self._on_api_trouble(method, "rate_limited")
        log.warning("slack asked bot %r to wait %.0fs before %s (429)", self._bot_id, delay, method)
        await asyncio.sleep(delay)
        state.next_attempt_requested = True
        state.increment_current_attempt()


def _retry_after(headers: Mapping[str, Any]) -> float:
    for name, value in headers.items():
        if name.lower() == "retry-after":
            first: Any = value[0] if is_array(value) else value
            try:
                return max(float(first), 0.0)
            except (TypeError, ValueError):
                break
    return 1.0


def _mentions(text: str, user_id: str) -> bool:
    return re.search(rf"<@{re.escape(user_id)}(?:\|[^>]*)?>", text) is not None


def _form_payload(body: bytes) -> dict[str, Any]:
    """A form-encoded request: a click's JSON in its `payload` field, or a slash command's own fields."""
    try:
        form = parse_qs(body.decode(), max_num_fields=FORM_FIELDS)
    except ValueError:  # UnicodeDecodeError is a ValueError; so is a form of too many fields
        raise MalformedPayload("a form body that cannot be read") from None
    if "payload" in form:
        return read_json_object(form["payload"][0], "the form's payload field")
    if "command" in form:
        return {name: values[0] for name, values in form.items()}
    raise MalformedPayload("form body without a payload or command field")


def slash_word(command: str) -> str:
    """The command word of a slash command: `/new` is `new`, and a word Slack keeps for itself is registered under
    `SLASH_PREFIX` (`/agent-status` is `status`)."""
    return command.removeprefix("/").removeprefix(SLASH_PREFIX)


def _team(payload: Mapping[str, Any]) -> str | None:
    team = payload.get("team")
    return optional_text_id(team.get("id"), "slack team.id") if is_object(team) else None


def _room_team(address: ChatAddress) -> str:
    """The workspace of a room `<team>:<channel>`."""
    return address.channel_id.partition(":")[0]


def _typed(view: Mapping[str, Any], block_id: str, action_id: str) -> str | None:
    """What a person typed in a submitted view's input (`view.state.values[block][action].value`)."""
    state = view.get("state")
    values = state.get("values") if is_object(state) else None
    block = values.get(block_id) if is_object(values) else None
    element = block.get(action_id) if is_object(block) else None
    value = element.get("value") if is_object(element) else None
    return value if isinstance(value, str) else None


def _attachments(event: Mapping[str, Any]) -> tuple[FileRef, ...]:
    refs = (file_ref(file_id=f.get("id"), name=f.get("name") or f.get("title"), mime_type=_mimetype(f),
                     size=f.get("size"), duration=_seconds(f.get("duration_ms")))
            for f in objects_in(event.get("files")))
    return tuple(ref for ref in refs if ref is not None)


def _mimetype(file: Mapping[str, Any]) -> Any:
    """An audio clip (`subtype: slack_audio`) is sound even where Slack serves it as `video/mp4` or `video/webm`."""
    mimetype = file.get("mimetype")
    if file.get("subtype") == "slack_audio" and isinstance(mimetype, str) and mimetype.startswith("video/"):
        return "audio/" + mimetype.removeprefix("video/")
    return mimetype


def _seconds(milliseconds: Any) -> Any:
    """A clip's `duration_ms` in seconds; anything but a count of them is left for `file_ref` to drop."""
    if isinstance(milliseconds, int) and not isinstance(milliseconds, bool) and 0 <= milliseconds < 2**53:
        return milliseconds / 1000
    return None


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_LIMIT]}}


def _markdown(text: str) -> dict[str, Any]:
    """A `markdown` block: the answer's Markdown as Slack renders it, as a stream shows it."""
    return {"type": "markdown", "text": text}


def _feedback_block(run_id: int) -> dict[str, Any]:
    """Slack's feedback block (https://docs.slack.dev/reference/block-kit/blocks/context-actions-block)."""
    def button(label: str, verb: Verb, accessible: str) -> dict[str, Any]:
        return {"text": {"type": "plain_text", "text": label}, "value": f"{verb}:{run_id}",
                "accessibility_label": accessible}
    return {"type": "context_actions", "elements": [{
        "type": "feedback_buttons", "action_id": FEEDBACK_ACTION,
        "positive_button": button("👍", "thumbs_up", "A good answer"),
        "negative_button": button("👎", "thumbs_down", "A poor answer")}]}


def _feedback_verb(action: Mapping[str, Any]) -> Verb | None:
    """`thumbs_up` or `thumbs_down` for a press on the feedback block, else None."""
    if action.get("action_id") != FEEDBACK_ACTION:
        return None
    verb = str(action.get("value") or "").partition(":")[0]
    return verb if verb in ("thumbs_up", "thumbs_down") else None


def _card_blocks(text: str, card: ApprovalCard) -> list[dict[str, Any]]:
    return [_section(text), {"type": "actions", "block_id": f"approval:{card.approval_id}", "elements": [
        _button(label, f"approval:{verb}", card.approval_id, _STYLES.get(verb)) for verb, label in card.buttons]}]


_STYLES: dict[Verb, str] = {"approve": "primary", "deny": "danger"}


def _live_blocks(mrkdwn: str) -> list[dict[str, Any]]:
    """A live reply while its turn runs: its text, and a Stop button (a click parses as verb `stop`)."""
    return [_section(mrkdwn), {"type": "actions", "block_id": "live:stop", "elements": [
        _button("⏹ Stop", "approval:stop", "stop", None)]}]


def _button(label: str, action_id: str, value: str, style: str | None) -> dict[str, Any]:
    styled = {"style": style} if style else {}
    return {"type": "button", "action_id": action_id, "value": value, "text": {"type": "plain_text", "text": label},
            **styled}


def url_verification_challenge(payload: Mapping[str, Any]) -> str | None:
    """The challenge of Slack's `url_verification` request, which is answered without being delivered."""
    if payload.get("type") == "url_verification" and isinstance(payload.get("challenge"), str):
        return str(payload["challenge"])
    return None
