"""A local Telegram Bot API server: the fake Telegram of the test-suite and of ``gateway demo``.

Any Bot API client works against it unmodified, e.g.
``telegram.Bot(token, base_url=f"{telegram.url}/bot")``. Callers play the users
(``user_says``, ``user_sends_file``, ``user_clicks``) and read what bots did (``calls``,
``bot_messages``, ``transcript``, ``file_content``: what ``sendPhoto``/``sendDocument`` uploaded).
Requests may be JSON, urlencoded or multipart; like the Bot API, form fields
carry nested objects as JSON strings. Answers are ``{"ok": true, "result": ...}`` or
``{"ok": false, "error_code": N, "description": ..., "parameters": ...}``.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import mimetypes
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp
from aiohttp import web

from local_platforms.server import ChangeSignal, LocalPlatform, LocalServer, is_json_array, is_json_object, json_object
from local_platforms.telegram_drafts import Drafts
from local_platforms.telegram_html import RejectedContent, detect_entities, inline_keyboard, message_text
from local_platforms.telegram_reactions import ReactionInvalid, Reactions

__all__ = ["ApiCall", "ApiError", "LocalTelegram"]

JSON = dict[str, Any]
MemberStatus = Literal["creator", "administrator", "member"]

PHOTO_UPLOAD_LIMIT = 10_000_000
UPLOAD_LIMIT = 50_000_000
CAPTION_LIMIT = 1024
_SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,256}")
_NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are "
    "exactly the same as a current content and reply markup of the message"
)
_WEBHOOK_ACTIVE = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
)
_POLL_SUPERSEDED = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
_CHAT_ACTIONS = frozenset(
    {"typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice",
     "upload_document", "choose_sticker", "find_location", "record_video_note", "upload_video_note"}
)  # fmt: skip
_ADMIN_RIGHTS = (
    "can_manage_chat", "can_delete_messages", "can_manage_video_chats", "can_restrict_members",
    "can_promote_members", "can_change_info", "can_invite_users", "can_post_stories",
    "can_edit_stories", "can_delete_stories", "can_pin_messages", "can_manage_topics",
)  # fmt: skip
# Form fields arrive as strings; these names get their Bot API types back.
_INT_PARAMS = frozenset(
    {"chat_id", "message_id", "message_thread_id", "reply_to_message_id", "offset", "limit", "timeout",
     "user_id", "from_chat_id", "max_connections", "cache_time", "draft_id"}
)  # fmt: skip
_BOOL_PARAMS = frozenset(
    {"drop_pending_updates", "disable_notification", "protect_content", "show_alert",
     "allow_sending_without_reply", "disable_web_page_preview", "allow_paid_broadcast"}
)  # fmt: skip
_JSON_PARAMS = frozenset(
    {"reply_markup", "reply_parameters", "entities", "caption_entities", "allowed_updates",
     "link_preview_options", "commands", "scope", "media", "reaction"}
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiCall:
    """One Bot API request, recorded when it arrived."""

    token: str
    method: str
    """Canonical name (``sendMessage``) of a known method; the name as sent otherwise."""
    params: dict[str, Any]
    """Decoded parameters: integers, booleans and JSON objects restored from form fields."""
    at: float
    """``time.monotonic()`` on arrival."""


class ApiError(Exception):
    """A Bot API error answer."""

    def __init__(self, status: int, description: str, parameters: JSON | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters

    def to_json(self) -> JSON:
        body: JSON = {"ok": False, "error_code": self.status, "description": self.description}
        if self.parameters:
            body["parameters"] = self.parameters
        return body


@dataclass(slots=True, eq=False)
class _Queued:
    update: JSON
    update_id: int
    redelivery: bool = False
    """Queued again by ``deliver_again``: survives one getUpdates offset below its id."""


@dataclass(slots=True)
class _Bot:
    token: str
    user: JSON
    queue: list[_Queued] = field(default_factory=list[_Queued])
    history: dict[int, JSON] = field(default_factory=dict[int, JSON])
    next_update_id: int = 1
    webhook_url: str = ""
    secret_token: str | None = None
    last_webhook_error: tuple[int, str] | None = None
    poll_generation: int = 0
    commands: dict[str, list[JSON]] = field(default_factory=dict[str, list[JSON]])
    """The command menu per scope type (``default``, ``all_private_chats``, ...), as ``setMyCommands`` set it."""


Handler = Callable[[_Bot, JSON], Awaitable[Any]]


class LocalTelegram(LocalPlatform):
    """An in-process Bot API server on ``host:port`` (port 0: the OS picks one).

    Everything a user does is delivered to one bot: queued for ``getUpdates``, or POSTed to its
    webhook when one is set. In groups every message reaches the bot, as if privacy mode were off.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, webhook_timeout: float = 10.0) -> None:
        self.url = ""
        """``http://host:port`` once started; bots use ``base_url=f"{url}/bot"``."""
        self.calls: list[ApiCall] = []
        self.webhook_responses: list[tuple[int, str]] = []
        self.drafts = Drafts()
        """What bots are writing in private chats (`sendMessageDraft`)."""
        self.reactions = Reactions()
        """The bots' reactions on messages (`setMessageReaction`)."""
        """(HTTP status, body) of every webhook push; status 0 when no HTTP answer came."""
        self._webhook_timeout = webhook_timeout
        self._bots: dict[str, _Bot] = {}
        self._users: dict[int, JSON] = {}
        self._chats: dict[int, JSON] = {}
        self._descriptions: dict[int, str] = {}
        self._members: dict[int, dict[int, MemberStatus]] = {}
        self._messages: dict[int, dict[int, JSON]] = {}
        self._next_message_ids: dict[int, int] = {}
        self._files: dict[str, tuple[JSON, bytes]] = {}
        self._open_queries: set[str] = set()
        self._query_ids = itertools.count(1)
        self._failures: dict[str, list[int]] = {}
        self._changes = ChangeSignal()
        self._closing = False
        self._server = LocalServer(host, port)
        self._methods = self._method_table()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on ``host:port`` and set ``url``."""
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle_api)
        app.router.add_get("/file/bot{token}/{file_path:.+}", self._handle_file)
        self.url = await self._server.start(app, client_timeout=self._webhook_timeout)
        self._closing = False

    async def stop(self) -> None:
        """Answer pending long polls and stop listening."""
        self._closing = True
        await self._notify()
        await self._server.stop()

    # -- the world: bots, users, chats, files --------------------------------------------------

    def add_bot(self, token: str, *, username: str, first_name: str = "Local Bot") -> JSON:
        """Register a bot; its id is the number before the token's colon. Returns its User JSON."""
        user: JSON = {"id": int(token.split(":")[0]), "is_bot": True, "first_name": first_name, "username": username}
        self._users[user["id"]] = user
        self._bots[token] = _Bot(token=token, user=user)
        return copy.deepcopy(user)

    def add_user(
        self,
        user_id: int,
        first_name: str,
        *,
        username: str | None = None,
        last_name: str | None = None,
        is_bot: bool = False,
    ) -> JSON:
        """Register a person (or another bot) who can speak in chats. Returns the User JSON."""
        user: JSON = {"id": user_id, "is_bot": is_bot, "first_name": first_name}
        user |= {key: value for key, value in (("last_name", last_name), ("username", username)) if value}
        self._users[user_id] = user
        return copy.deepcopy(user)

    def private_chat(self, user: JSON) -> JSON:
        """The private chat between ``user`` and the bots; its id is the user's id."""
        names = ("first_name", "last_name", "username")
        chat: JSON = {"id": user["id"], "type": "private"} | {key: user[key] for key in names if key in user}
        self._chats[chat["id"]] = chat
        self._users.setdefault(user["id"], user)
        self._members.setdefault(chat["id"], {})[user["id"]] = "member"
        return copy.deepcopy(chat)

    def group(self, chat_id: int, title: str, *, supergroup: bool = False, forum: bool = False,
              description: str | None = None) -> JSON:
        """Register a group (negative id); ``forum`` makes a supergroup with topics.

        ``description`` is what getChat reports (never part of the Chat in an update).
        """
        if chat_id >= 0:
            raise ValueError(f"group ids are negative on Telegram, got {chat_id!r}")
        chat: JSON = {"id": chat_id, "type": "supergroup" if supergroup or forum else "group", "title": title}
        if forum:
            chat["is_forum"] = True
        self._chats[chat_id] = chat
        if description is not None:
            self._descriptions[chat_id] = description
        self._members.setdefault(chat_id, {})
        return copy.deepcopy(chat)

    def add_member(self, chat: JSON, user: JSON, *, status: MemberStatus = "member") -> None:
        """Put ``user`` (or a bot's User JSON) into ``chat``; speakers join as members on their own."""
        self._users.setdefault(user["id"], user)
        self._members.setdefault(chat["id"], {})[user["id"]] = status

    def remove_member(self, chat: JSON, user: JSON) -> None:
        """``user`` leaves ``chat`` (or is removed): getChatMember answers ``left`` from now on."""
        self._members.get(chat["id"], {}).pop(user["id"], None)

    def add_file(self, file_id: str, content: bytes, *, file_name: str | None = None,
                 folder: str = "documents") -> JSON:
        """Make ``file_id`` answerable by getFile and downloadable (at ``{folder}/{file_name}``, as the Bot API
        names a file's path); returns the File JSON."""
        path = f"{folder}/{file_name or file_id}"
        info = {"file_id": file_id, "file_unique_id": f"u-{file_id}", "file_size": len(content), "file_path": path}
        self._files[file_id] = (info, content)
        return copy.deepcopy(info)

    # -- what users do ------------------------------------------------------------------------

    async def user_says(
        self,
        token: str,
        chat: JSON,
        user: JSON,
        text: str,
        *,
        reply_to: JSON | None = None,
        message_thread_id: int | None = None,
    ) -> JSON:
        """``user`` writes ``text`` in ``chat``; the bot of ``token`` gets the update. Returns the Message."""
        bot, chat = self._bot(token), self._known_chat(chat["id"])
        self._users.setdefault(user["id"], user)
        self._members[chat["id"]].setdefault(user["id"], "member")
        self._members[chat["id"]].setdefault(bot.user["id"], "member")
        if message_thread_id is None and reply_to is not None:
            message_thread_id = reply_to.get("message_thread_id")
        message = self._new_message(chat, user, message_thread_id)
        message["text"] = text
        if entities := detect_entities(text):
            message["entities"] = entities
        if reply_to is not None:
            quoted = self._quoted(chat["id"], reply_to["message_id"])
            message["reply_to_message"] = quoted or {k: v for k, v in reply_to.items() if k != "reply_to_message"}
        self._store(message)
        update = self._next_update(bot, {"message": message})
        await self._deliver(bot, update["update_id"], update)
        return copy.deepcopy(message)

    async def user_sends_file(self, token: str, chat: JSON, user: JSON, content: bytes, *, file_name: str,
                              mime_type: str, caption: str = "", photo: bool = False) -> JSON:
        """``user`` sends a file (a ``photo``, or a document) with ``caption``; getFile then serves it."""
        return await self._user_sends(token, chat, user, self._attached(content, file_name, mime_type, photo=photo),
                                      caption)

    async def user_sends_voice(self, token: str, chat: JSON, user: JSON, content: bytes, *, duration: int,
                               caption: str = "", file_name: str | None = None, mime_type: str | None = None) -> JSON:
        """``user`` records a voice note (``voice``: Opus in Ogg, stored as ``voice/file_N.oga``) of ``duration``
        seconds, or with ``file_name`` sends an audio file (``audio``, played as music); getFile then serves it."""
        kind = "voice" if file_name is None else "audio"
        file_id = f"f{len(self._files) + 1}-{uuid.uuid4().hex[:8]}"
        stored = f"file_{len(self._files) + 1}.oga" if file_name is None else f"{file_id}-{file_name}"
        info = self.add_file(file_id, content, file_name=stored, folder="voice" if kind == "voice" else "music")
        fields: JSON = {"file_id": file_id, "file_unique_id": info["file_unique_id"], "duration": duration,
                        "mime_type": mime_type or ("audio/ogg" if kind == "voice" else "audio/mpeg"),
                        "file_size": len(content)}
        if file_name is not None:
            fields["file_name"] = file_name
        return await self._user_sends(token, chat, user, {kind: fields}, caption)

    async def _user_sends(self, token: str, chat: JSON, user: JSON, attached: JSON, caption: str) -> JSON:
        bot, chat = self._bot(token), self._known_chat(chat["id"])
        self._users.setdefault(user["id"], user)
        self._members[chat["id"]].setdefault(user["id"], "member")
        message = self._new_message(chat, user, None)
        message |= attached
        if caption:
            message["caption"] = caption
            if entities := detect_entities(caption):
                message["caption_entities"] = entities
        self._store(message)
        update = self._next_update(bot, {"message": message})
        await self._deliver(bot, update["update_id"], update)
        return copy.deepcopy(message)

    def file_content(self, message: JSON) -> bytes:
        """The bytes of the photo (largest size), document, voice note or audio a message carries."""
        if "photo" in message:
            return self._files[message["photo"][-1]["file_id"]][1]
        kind = next(kind for kind in ("document", "voice", "audio") if kind in message)
        return self._files[message[kind]["file_id"]][1]

    async def user_clicks(self, token: str, message: JSON, user: JSON, data: str) -> JSON:
        """``user`` presses the inline button with ``data`` under ``message``. Returns the CallbackQuery.

        The data is not checked against the message's buttons, so forged clicks can be tested.
        """
        bot = self._bot(token)
        current = self._messages.get(message["chat"]["id"], {}).get(message["message_id"])
        if current is None:
            raise ValueError(f"message {message['message_id']!r} is not in chat {message['chat']['id']!r}")
        query: JSON = {
            "id": str(next(self._query_ids)),
            "from": user,
            "message": current,
            "chat_instance": str(abs(current["chat"]["id"]) * 7919),
            "data": data,
        }
        self._open_queries.add(query["id"])
        update = self._next_update(bot, {"callback_query": query})
        await self._deliver(bot, update["update_id"], update)
        return copy.deepcopy(update["callback_query"])

    async def push_update(self, token: str, update: JSON) -> None:
        """Deliver ``update`` verbatim, even malformed; one without an int update_id gets a queue slot."""
        bot = self._bot(token)
        update_id = update.get("update_id")
        if not isinstance(update_id, int):
            update_id = bot.next_update_id
        bot.next_update_id = max(bot.next_update_id, update_id + 1)
        await self._deliver(bot, update_id, copy.deepcopy(update))

    async def deliver_again(self, token: str, update_id: int) -> None:
        """Send an already delivered update once more, with the same update_id, on the active channel."""
        bot = self._bot(token)
        if update_id not in bot.history:
            raise ValueError(f"update {update_id!r} was never delivered to this bot")
        await self._deliver(bot, update_id, bot.history[update_id], redelivery=True)

    async def redeliver_pending(self, token: str) -> int:
        """POST the updates still queued for the bot's webhook, in order; returns how many it accepted."""
        bot = self._bot(token)
        if not bot.webhook_url:
            return 0
        accepted = [entry for entry in list(bot.queue) if await self._push(bot, entry.update)]
        bot.queue = [entry for entry in bot.queue if entry not in accepted]
        await self._notify()
        return len(accepted)

    def fail_next(self, method: str, *, retry_after: int = 1, times: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` (any bot) with 429 Too Many Requests."""
        self._failures.setdefault(method.lower(), []).extend([retry_after] * times)

    # -- what bots did ---------------------------------------------------------------------

    def messages(self, chat_id: int) -> list[JSON]:
        """Every message in the chat, users' and bots', current state, oldest first."""
        return copy.deepcopy(list(self._messages.get(chat_id, {}).values()))

    def bot_messages(self, chat_id: int, *, thread_id: int | None = None) -> list[JSON]:
        """Messages bots posted in the chat (after edits, without deleted ones); ``thread_id`` filters."""
        bot_ids = {bot.user["id"] for bot in self._bots.values()}
        return [
            message
            for message in self.messages(chat_id)
            if message["from"]["id"] in bot_ids and (thread_id is None or message.get("message_thread_id") == thread_id)
        ]

    def transcript(self, chat_id: int) -> list[tuple[str, str]]:
        """(sender's first and last name, current text) of every message in the chat, in order."""
        return [(_display_name(m["from"]), m.get("text", "")) for m in self.messages(chat_id)]

    async def wait_for(self, predicate: Callable[[], bool], *, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        # A timeout argument rather than the caller's asyncio.timeout, as asyncio.wait_for takes one:
        # tests read `await telegram.wait_for(lambda: ..., timeout=2)`.
        """Return once ``predicate()`` is true, re-checked after every API call and delivery.

        Raises:
            TimeoutError: it stayed false for ``timeout`` seconds.
        """
        await self._changes.wait_for(predicate, timeout=timeout)

    # -- HTTP --------------------------------------------------------------------------------

    async def _handle_api(self, request: web.Request) -> web.Response:
        token, method = request.match_info["token"], request.match_info["method"]
        name, handler = self._methods.get(method.lower(), (method, None))
        try:
            params = await _read_params(request)
        except ApiError as error:
            return web.json_response(error.to_json(), status=error.status)
        self.calls.append(ApiCall(token=token, method=name, params=params, at=time.monotonic()))
        await self._notify()
        try:
            body, status = {"ok": True, "result": await self._dispatch(token, name, handler, params)}, 200
        except RejectedContent as error:
            body, status = ApiError(400, str(error)).to_json(), 400
        except ApiError as error:
            body, status = error.to_json(), error.status
        await self._notify()
        return web.json_response(body, status=status)

    async def _dispatch(self, token: str, name: str, handler: Handler | None, params: JSON) -> Any:
        bot = self._bots.get(token)
        if bot is None:
            raise ApiError(401, "Unauthorized")
        if handler is None:
            raise ApiError(404, "Not Found")
        if failures := self._failures.get(name.lower()):
            retry_after = failures.pop(0)
            raise ApiError(429, f"Too Many Requests: retry after {retry_after}", {"retry_after": retry_after})
        return await handler(bot, params)

    async def _handle_file(self, request: web.Request) -> web.Response:
        path = request.match_info["file_path"]
        if request.match_info["token"] in self._bots:
            for info, content in self._files.values():
                if info["file_path"] == path:  # typed by its name: a download reads bytes whatever the type
                    kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
                    return web.Response(body=content, headers={"Content-Type": kind})
        return web.json_response(ApiError(404, "Not Found").to_json(), status=404)

    def _method_table(self) -> dict[str, tuple[str, Handler]]:
        handlers: tuple[tuple[str, Handler], ...] = (
            ("getMe", self._get_me),
            ("getUpdates", self._get_updates),
            ("setWebhook", self._set_webhook),
            ("deleteWebhook", self._delete_webhook),
            ("getWebhookInfo", self._get_webhook_info),
            ("setMyCommands", self._set_my_commands),
            ("getMyCommands", self._get_my_commands),
            ("sendMessage", self._send_message),
            ("editMessageText", self._edit_message_text),
            ("editMessageReplyMarkup", self._edit_message_reply_markup),
            ("deleteMessage", self._delete_message),
            ("sendChatAction", self._send_chat_action),
            ("sendMessageDraft", self._send_message_draft),
            ("setMessageReaction", self._set_message_reaction),
            ("answerCallbackQuery", self._answer_callback_query),
            ("getChat", self._get_chat),
            ("getChatAdministrators", self._get_chat_administrators),
            ("getChatMemberCount", self._get_chat_member_count),
            ("getChatMember", self._get_chat_member),
            ("getFile", self._get_file),
            ("sendPhoto", self._send_photo),
            ("sendDocument", self._send_document),
        )
        return {name.lower(): (name, handler) for name, handler in handlers}

    # -- delivery ----------------------------------------------------------------------------

    def _next_update(self, bot: _Bot, body: JSON) -> JSON:
        update = {"update_id": bot.next_update_id, **copy.deepcopy(body)}
        bot.next_update_id += 1
        return update

    async def _deliver(self, bot: _Bot, update_id: int, update: JSON, *, redelivery: bool = False) -> None:
        bot.history[update_id] = update
        if not bot.webhook_url or not await self._push(bot, update):
            bot.queue.append(_Queued(update=update, update_id=update_id, redelivery=redelivery))
        await self._notify()

    async def _push(self, bot: _Bot, update: JSON) -> bool:
        if self._server.session is None:
            raise RuntimeError("start the LocalTelegram before it pushes to a webhook")
        headers = {"Content-Type": "application/json"}
        if bot.secret_token:
            headers["X-Telegram-Bot-Api-Secret-Token"] = bot.secret_token
        try:
            async with self._server.session.post(bot.webhook_url, data=json.dumps(update), headers=headers) as answer:
                status, body, reason = answer.status, await answer.text(), answer.reason or ""
        except (aiohttp.ClientError, TimeoutError) as error:
            status, body, reason = 0, f"{type(error).__name__}: {error}", "Connection failed"
        self.webhook_responses.append((status, body))
        if 200 <= status < 300:
            return True
        bot.last_webhook_error = (int(time.time()), f"Wrong response from the webhook: {status} {reason}")
        return False

    async def _notify(self) -> None:
        self._changes.notify()

    # -- Bot API methods: updates and webhooks ----------------------------------------------------

    async def _get_me(self, bot: _Bot, params: JSON) -> JSON:
        flags = {"can_join_groups": True, "can_read_all_group_messages": True, "supports_inline_queries": False}
        return {**bot.user, **flags}

    async def _get_updates(self, bot: _Bot, params: JSON) -> list[JSON]:
        if bot.webhook_url:
            raise ApiError(409, _WEBHOOK_ACTIVE)
        _confirm(bot, _int_param(params, "offset", 0))
        limit = min(max(_int_param(params, "limit", 100), 1), 100)
        bot.poll_generation += 1
        generation = bot.poll_generation
        timeout = _int_param(params, "timeout", 0)
        if not bot.queue and timeout > 0:
            with contextlib.suppress(TimeoutError):
                await self.wait_for(
                    lambda: bool(bot.queue) or bot.poll_generation != generation or self._closing,
                    timeout=timeout,
                )
        if bot.poll_generation != generation:
            raise ApiError(409, _POLL_SUPERSEDED)
        batch = bot.queue[:limit]
        for entry in batch:
            entry.redelivery = False
        return [entry.update for entry in batch]

    async def _set_webhook(self, bot: _Bot, params: JSON) -> bool:
        url, secret = str(params.get("url") or ""), params.get("secret_token")
        if secret is not None and not _SECRET_TOKEN.fullmatch(str(secret)):
            raise ApiError(400, "Bad Request: secret token contains unallowed characters")
        if url and not url.startswith(("http://", "https://")):
            raise ApiError(400, "Bad Request: bad webhook: HTTPS url must be provided for webhook")
        bot.webhook_url, bot.secret_token, bot.last_webhook_error = url, secret, None
        if params.get("drop_pending_updates"):
            bot.queue.clear()
        return True

    async def _delete_webhook(self, bot: _Bot, params: JSON) -> bool:
        bot.webhook_url, bot.secret_token = "", None
        if params.get("drop_pending_updates"):
            bot.queue.clear()
        return True

    async def _get_webhook_info(self, bot: _Bot, params: JSON) -> JSON:
        info: JSON = {"url": bot.webhook_url, "has_custom_certificate": False, "pending_update_count": len(bot.queue)}
        if bot.webhook_url:
            info["max_connections"] = 40
        if bot.last_webhook_error:
            info["last_error_date"], info["last_error_message"] = bot.last_webhook_error
        return info

    async def _set_my_commands(self, bot: _Bot, params: JSON) -> bool:
        commands: Any = params.get("commands")
        if not is_json_array(commands) or len(commands) > 100:
            raise ApiError(400, "Bad Request: commands must be an array of at most 100 BotCommand")
        listed: list[JSON] = []
        for command in commands:
            name = command.get("command") if is_json_object(command) else None
            description = command.get("description") if is_json_object(command) else None
            if not (isinstance(name, str) and _COMMAND_NAME.fullmatch(name)) or not (
                    isinstance(description, str) and 1 <= len(description) <= 256):
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            listed.append({"command": name, "description": description})
        bot.commands[_scope_type(params)] = listed
        return True

    async def _get_my_commands(self, bot: _Bot, params: JSON) -> list[JSON]:
        return copy.deepcopy(bot.commands.get(_scope_type(params), []))

    def my_commands(self, token: str, scope: str = "default") -> list[JSON]:
        """The command menu the bot of ``token`` set for ``scope`` (``all_private_chats``, ``all_group_chats``)."""
        return copy.deepcopy(self._bot(token).commands.get(scope, []))

    # -- Bot API methods: messages ----------------------------------------------------------

    async def _send_message(self, bot: _Bot, params: JSON) -> JSON:
        chat = self._target_chat(params)
        text, entities = message_text(params.get("text"), params.get("parse_mode"), params.get("entities"))
        markup = inline_keyboard(params.get("reply_markup"))
        quoted = self._reply_target(chat, params)
        thread_id = params.get("message_thread_id")
        if thread_id is None and quoted is not None:
            thread_id = quoted.get("message_thread_id")
        message = self._new_message(chat, bot.user, thread_id)
        message["text"] = text
        self.drafts.sent(chat["id"])
        message |= {"entities": entities} if entities else {}
        message |= {"reply_to_message": quoted} if quoted else {}
        message |= {"reply_markup": copy.deepcopy(markup)} if markup else {}
        self._store(message)
        return message

    async def _edit_message_text(self, bot: _Bot, params: JSON) -> JSON:
        message = self._editable(bot, params)
        if "text" not in message:
            raise ApiError(400, "Bad Request: there is no text in the message to edit")
        text, entities = message_text(params.get("text"), params.get("parse_mode"), params.get("entities"))
        markup = inline_keyboard(params.get("reply_markup"))
        if (message["text"], message.get("entities", []), message.get("reply_markup")) == (text, entities, markup):
            raise ApiError(400, _NOT_MODIFIED)
        message["text"] = text
        _set_or_drop(message, "entities", entities)
        # Telegram removes an inline keyboard that the edit does not send again.
        _set_or_drop(message, "reply_markup", copy.deepcopy(markup))
        message["edit_date"] = int(time.time())
        return message

    async def _edit_message_reply_markup(self, bot: _Bot, params: JSON) -> JSON:
        message = self._editable(bot, params)
        markup = inline_keyboard(params.get("reply_markup"))
        if message.get("reply_markup") == markup:
            raise ApiError(400, _NOT_MODIFIED)
        _set_or_drop(message, "reply_markup", copy.deepcopy(markup))
        message["edit_date"] = int(time.time())
        return message

    async def _delete_message(self, bot: _Bot, params: JSON) -> bool:
        chat = self._target_chat(params)
        message = self._messages.get(chat["id"], {}).get(params.get("message_id", 0))
        if message is None:
            raise ApiError(400, "Bad Request: message to delete not found")
        is_admin = self._members[chat["id"]].get(bot.user["id"]) in {"creator", "administrator"}
        if message["from"]["id"] != bot.user["id"] and chat["type"] != "private" and not is_admin:
            raise ApiError(400, "Bad Request: message can't be deleted")
        del self._messages[chat["id"]][message["message_id"]]
        return True

    async def _send_chat_action(self, bot: _Bot, params: JSON) -> bool:
        self._target_chat(params)
        if params.get("action") not in _CHAT_ACTIONS:
            raise ApiError(400, "Bad Request: wrong parameter action in request")
        return True

    async def _send_message_draft(self, bot: _Bot, params: JSON) -> bool:
        chat = self._target_chat(params)
        if chat["type"] != "private":
            raise ApiError(400, "Bad Request: TEXTDRAFT_PEER_INVALID")
        draft_id = _int_param(params, "draft_id", 0)
        if draft_id == 0:
            raise ApiError(400, "Bad Request: draft_id must be non-zero")
        text, _ = message_text(params.get("text") or " ", params.get("parse_mode"), params.get("entities"))
        self.drafts.show(chat["id"], draft_id, text.strip())
        return True

    async def _set_message_reaction(self, bot: _Bot, params: JSON) -> bool:
        chat = self._target_chat(params)
        message_id = _int_param(params, "message_id", 0)
        if message_id not in self._messages.get(chat["id"], {}):
            raise ApiError(400, "Bad Request: message to react not found")
        try:
            self.reactions.set(chat["id"], message_id, params.get("reaction"))
        except ReactionInvalid:
            raise ApiError(400, "Bad Request: REACTION_INVALID") from None
        await self._notify()
        return True

    async def _answer_callback_query(self, bot: _Bot, params: JSON) -> bool:
        query_id = str(params.get("callback_query_id", ""))
        if query_id not in self._open_queries:
            raise ApiError(400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
        self._open_queries.discard(query_id)
        return True

    # -- Bot API methods: chats and files ----------------------------------------------

    async def _get_chat(self, bot: _Bot, params: JSON) -> JSON:
        chat = self._target_chat(params)
        gifts = dict.fromkeys(
            ("unlimited_gifts", "limited_gifts", "unique_gifts", "premium_subscription", "gifts_from_channels"),
            False,
        )
        extra = {"description": self._descriptions[chat["id"]]} if chat["id"] in self._descriptions else {}
        return {**chat, **extra, "accent_color_id": 0, "max_reaction_count": 11, "accepted_gift_types": gifts}

    async def _get_chat_administrators(self, bot: _Bot, params: JSON) -> list[JSON]:
        chat = self._target_chat(params)
        if chat["type"] == "private":
            raise ApiError(400, "Bad Request: there are no administrators in the private chat")
        members = self._members[chat["id"]].items()
        return [self._chat_member(user_id, status) for user_id, status in members if status != "member"]

    async def _get_chat_member(self, bot: _Bot, params: JSON) -> JSON:
        chat = self._target_chat(params)
        members = self._members.get(chat["id"], {})
        if chat["type"] != "private" and bot.user["id"] not in members:
            raise ApiError(403, "Forbidden: bot is not a member of the group chat")
        user_id = params.get("user_id")
        if user_id not in self._users:
            raise ApiError(400, "Bad Request: user not found")
        if user_id not in members:
            return {"status": "left", "user": self._users[user_id]}
        return self._chat_member(user_id, members[user_id])

    async def _get_chat_member_count(self, bot: _Bot, params: JSON) -> int:
        chat = self._target_chat(params)
        return 2 if chat["type"] == "private" else len(self._members[chat["id"]])

    async def _get_file(self, bot: _Bot, params: JSON) -> JSON:
        if params.get("file_id") not in self._files:
            raise ApiError(400, "Bad Request: invalid file_id")
        return self._files[params["file_id"]][0]

    async def _send_photo(self, bot: _Bot, params: JSON) -> JSON:
        return self._send_file(bot, params, "photo", PHOTO_UPLOAD_LIMIT)

    async def _send_document(self, bot: _Bot, params: JSON) -> JSON:
        return self._send_file(bot, params, "document", UPLOAD_LIMIT)

    def _send_file(self, bot: _Bot, params: JSON, kind: str, limit: int) -> JSON:
        """A multipart upload of ``kind`` (a ``file_id`` string resends a stored one), with a caption."""
        chat, upload = self._target_chat(params), params.get(kind)
        if not is_json_object(upload):
            raise ApiError(400, f"Bad Request: there is no {kind} in the request")
        if len(upload["content"]) > limit:
            raise ApiError(400 if kind == "photo" else 413, "Bad Request: file is too big" if kind == "photo"
                           else "Request Entity Too Large")
        caption = params.get("caption") or ""
        if len(caption) > CAPTION_LIMIT:
            raise ApiError(400, "Bad Request: message caption is too long")
        message = self._new_message(chat, bot.user, params.get("message_thread_id"))
        mime = "image/jpeg" if kind == "photo" else mimetypes.guess_type(upload["file_name"] or "")[0]
        message |= self._attached(upload["content"], upload["file_name"] or kind, mime or "application/octet-stream",
                                  photo=kind == "photo")
        message |= {"caption": caption} if caption else {}
        self._store(message)
        return message

    def _attached(self, content: bytes, file_name: str, mime_type: str, *, photo: bool) -> JSON:
        """The message fields of a file, stored for getFile: a photo's sizes, or a document."""
        file_id = f"f{len(self._files) + 1}-{uuid.uuid4().hex[:8]}"
        info = self.add_file(file_id, content, file_name=f"{file_id}-{file_name}")
        if photo:
            return {"photo": [{"file_id": file_id, "file_unique_id": info["file_unique_id"], "width": 800,
                               "height": 600, "file_size": len(content)}]}
        return {"document": {"file_id": file_id, "file_unique_id": info["file_unique_id"], "file_name": file_name,
                             "mime_type": mime_type, "file_size": len(content)}}

    # -- state helpers ---------------------------------------------------------------------

    def _bot(self, token: str) -> _Bot:
        if token not in self._bots:
            raise ValueError("unknown bot token; register it with add_bot() first")
        return self._bots[token]

    def _known_chat(self, chat_id: int) -> JSON:
        if chat_id not in self._chats:
            raise ValueError(f"unknown chat {chat_id!r}; create it with private_chat() or group() first")
        return self._chats[chat_id]

    def _target_chat(self, params: JSON) -> JSON:
        chat_id = params.get("chat_id")
        if chat_id is None or chat_id == "":
            raise ApiError(400, "Bad Request: chat_id is empty")
        if isinstance(chat_id, int):
            chat = self._chats.get(chat_id)
        else:
            chat = next((c for c in self._chats.values() if f"@{c.get('username')}" == chat_id), None)
        if chat is None:
            raise ApiError(400, "Bad Request: chat not found")
        return chat

    def _editable(self, bot: _Bot, params: JSON) -> JSON:
        if "inline_message_id" in params:
            raise ApiError(400, "Bad Request: message to edit not found")
        chat = self._target_chat(params)
        message = self._messages.get(chat["id"], {}).get(params.get("message_id", 0))
        if message is None:
            raise ApiError(400, "Bad Request: message to edit not found")
        if message["from"]["id"] != bot.user["id"]:
            raise ApiError(400, "Bad Request: message can't be edited")
        return message

    def _reply_target(self, chat: JSON, params: JSON) -> JSON | None:
        reply = params.get("reply_parameters")
        if not is_json_object(reply) and "reply_to_message_id" in params:
            reply = {"message_id": params["reply_to_message_id"]} | {
                "allow_sending_without_reply": params.get("allow_sending_without_reply", False)
            }
        if not is_json_object(reply):
            return None
        chat_id = reply["chat_id"] if isinstance(reply.get("chat_id"), int) else chat["id"]
        quoted = self._quoted(chat_id, reply.get("message_id"))
        if quoted is None and not reply.get("allow_sending_without_reply"):
            raise ApiError(400, "Bad Request: message to be replied not found")
        return quoted

    def _quoted(self, chat_id: int, message_id: Any) -> JSON | None:
        message = self._messages.get(chat_id, {}).get(message_id)
        if message is None:
            return None
        return {key: copy.deepcopy(value) for key, value in message.items() if key != "reply_to_message"}

    def _new_message(self, chat: JSON, sender: JSON, thread_id: int | None) -> JSON:
        message_id = self._next_message_ids.get(chat["id"], 1)
        self._next_message_ids[chat["id"]] = message_id + 1
        message: JSON = {"message_id": message_id, "from": sender, "chat": chat, "date": int(time.time())}
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            if chat.get("is_forum"):
                message["is_topic_message"] = True
        return message

    def _store(self, message: JSON) -> None:
        self._messages.setdefault(message["chat"]["id"], {})[message["message_id"]] = message

    def _chat_member(self, user_id: int, status: MemberStatus) -> JSON:
        member: JSON = {"status": status, "user": self._users[user_id]}
        if status != "member":
            member["is_anonymous"] = False
        if status == "administrator":
            member |= {"can_be_edited": False, **dict.fromkeys(_ADMIN_RIGHTS, True)}
        return member


# -- request decoding and validation --------------------------------------------------------------


_COMMAND_NAME = re.compile(r"[a-z0-9_]{1,32}")
"""What the Bot API takes as a command: lower-case letters, digits and underscores."""


def _scope_type(params: JSON) -> str:
    scope: Any = params.get("scope")
    return str(scope.get("type", "default")) if is_json_object(scope) else "default"


async def _read_params(request: web.Request) -> JSON:
    """Parameters from the query string and a JSON, urlencoded or multipart body."""
    params: JSON = dict(request.query)
    if request.content_type == "application/json":
        body = await json_object(request)
        if body is None:
            raise ApiError(400, "Bad Request: can't parse JSON object")
        params |= body
    elif request.content_type in {"application/x-www-form-urlencoded", "multipart/form-data"}:
        for key, value in (await request.post()).items():
            params[key] = (
                {"file_name": value.filename, "content": value.file.read()}
                if isinstance(value, web.FileField) else value
            )
    return {name: _decode_param(name, value) for name, value in params.items()}


def _decode_param(name: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if name in _JSON_PARAMS:
        try:
            return json.loads(value)
        except ValueError:
            raise ApiError(400, f"Bad Request: can't parse {name} JSON object") from None
    if name in _BOOL_PARAMS:
        return value.lower() in {"true", "1"}
    if name in _INT_PARAMS:
        with contextlib.suppress(ValueError):
            return int(value)
    return value


def _int_param(params: JSON, name: str, default: int) -> int:
    value = params.get(name, default)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ApiError(400, f"Bad Request: parameter {name!r} must be a number")
    return int(value)


def _confirm(bot: _Bot, offset: int) -> None:
    """getUpdates ``offset``: forget confirmed updates (id < offset), or all but the last -offset."""
    if offset < 0:
        bot.queue = bot.queue[offset:]
    elif offset > 0:
        bot.queue = [entry for entry in bot.queue if entry.update_id >= offset or entry.redelivery]


def _display_name(user: JSON) -> str:
    return " ".join(filter(None, (user.get("first_name"), user.get("last_name"))))


def _set_or_drop(message: JSON, key: str, value: Any) -> None:
    if value:
        message[key] = value
    else:
        message.pop(key, None)
