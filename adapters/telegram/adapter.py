"""Telegram over python-telegram-bot: long polling or webhook, one parser for both."""

from __future__ import annotations

import asyncio
import hmac
import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from functools import partial
from typing import Any, Literal, TypeVar

from telegram import (
    Bot,
    BotCommand,
    BotCommandScopeAllGroupChats,
    BotCommandScopeAllPrivateChats,
    CallbackQuery,
    ForceReply,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    MessageEntity,
    ReplyParameters,
    Update,
)
from telegram.constants import BotCommandLimit, ChatAction, ChatType, FileSizeLimit, MessageLimit, ParseMode
from telegram.error import BadRequest, InvalidToken, NetworkError, RetryAfter, TelegramError, TimedOut
from telegram.warnings import PTBDeprecationWarning, PTBUserWarning

from adapters.base import (
    REASON_PROMPT,
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
    Inbound,
    MalformedPayload,
    MenuCommand,
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
from adapters.protocols import WebhookRoute
from adapters.telegram.clients import bot_requests
from adapters.telegram.directory import Call, TelegramDirectory
from adapters.telegram.markup import render_telegram_html, render_telegram_plain
from adapters.wire import (
    InOrder,
    check_storable,
    file_ref,
    is_object,
    read_json_object,
    refuse_unreadable,
    text_id,
    unreadable_frame,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
DRAFT_LASTS = 30.0
"""Seconds Telegram shows a draft that is not sent again ("a temporary 30-second preview")."""

# Polling reads getUpdates through `do_api_request` on purpose (see `run_transport`); PTB warns about that.
warnings.filterwarnings("ignore", message=r"Please use 'Bot\.getUpdates'", category=PTBUserWarning)
# `RetryAfter` warns on construction that `retry_after` will become a timedelta; `_retry_after` reads both.
warnings.filterwarnings("ignore", message=r".*attribute `retry_after` will be of type", category=PTBDeprecationWarning)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
DEFAULT_API = "https://api.telegram.org"
ALLOWED_UPDATES = ("message", "callback_query")
MAX_RETRY_AFTER = 60.0
MAX_UPDATE_ID = 2**53
"""Update ids past this are not Telegram's (they fit in a double), and are not used as an offset."""
_GROUPS = (ChatType.GROUP, ChatType.SUPERGROUP)
PHOTO_TYPES = frozenset({"image/png", "image/jpeg", "image/webp"})
"""What `sendPhoto` shows as a picture; any other file goes as a document."""
_VERBS: dict[str, Verb] = {"ap:": "approve", "ac:": "approve_conversation", "dn:": "deny", "dr:": "ask_reason",
                         "st:": "stop", "qc:": "choose", "fu:": "thumbs_up", "fd:": "thumbs_down"}
_DATA: dict[Verb, str] = {verb: prefix for prefix, verb in _VERBS.items()}
_ICONS: dict[Verb, str] = {"approve": "✅ ", "approve_conversation": "✅ ", "deny": "✖️ ", "ask_reason": "✍️ "}


_UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError)
"""What reading a payload of the wrong shape raises."""


class TelegramAdapter:
    """A Telegram bot: it long-polls (`transport`) unless given a `webhook_url`, which Telegram then calls.

    It has no `read_thread`: the Bot API cannot read a chat's earlier messages.
    """

    platform: Platform = "telegram"
    limits = PlatformLimits(max_text=MessageLimit.MAX_TEXT_LENGTH, max_edit_text=MessageLimit.MAX_TEXT_LENGTH,
                            max_file_bytes=FileSizeLimit.FILESIZE_UPLOAD)
    draft_lasts = DRAFT_LASTS
    choice_buttons = 10
    """One option a row: more rows than this push the question off a phone's screen."""

    def __init__(self, *, bot_id: str, token: str, api_base_url: str | None = None,
                 webhook_url: str | None = None, webhook_secret: str | None = None,
                 poll_timeout: int = 30, on_api_trouble: ApiTrouble | None = None, reacts: bool = False) -> None:
        """`reacts`: the binding's `reaction`, 👀 on a person's message as the first sign where typing does not
        show."""
        base = (api_base_url or DEFAULT_API).rstrip("/")
        self.reacts = reacts
        self.bot_id = bot_id
        self.webhook_url = webhook_url
        self._webhook_secret = webhook_secret
        self._on_api_trouble = on_api_trouble
        request, get_updates_request = bot_requests()
        self._bot = Bot(token, base_url=f"{base}/bot", base_file_url=f"{base}/file/bot", request=request,
                        get_updates_request=get_updates_request)
        self.identity: BotIdentity | None = None
        self.directory = TelegramDirectory(self._bot, self._call)
        self.transport: Polling | None = None
        if webhook_url is None:
            self.transport = Polling(self._bot, self._call, poll_timeout=poll_timeout)

    async def open(self) -> BotIdentity:
        try:
            await self._call("getMe", self._bot.initialize)
        except InvalidToken as exc:
            raise PlatformConfigError(f"telegram refused the token of bot {self.bot_id!r}: {exc}") from None
        me = self._bot.bot
        self.identity = BotIdentity(user_id=str(me.id), handle=me.username, display_name=me.full_name)
        if self.webhook_url:
            await self._register_webhook()
        return self.identity

    async def close(self) -> None:
        await self._bot.shutdown()

    async def register_commands(self, commands: Sequence[MenuCommand]) -> None:
        """`setMyCommands` for private chats (every command) and for groups (those not of direct messages only)."""
        def listed(group: bool) -> list[BotCommand]:
            return [BotCommand(command.name, command.summary[:BotCommandLimit.MAX_DESCRIPTION])
                    for command in commands if not (group and command.direct_only)]
        await self._call("setMyCommands", lambda: self._bot.set_my_commands(
            listed(False), scope=BotCommandScopeAllPrivateChats()))
        await self._call("setMyCommands", lambda: self._bot.set_my_commands(
            listed(True), scope=BotCommandScopeAllGroupChats()))

    # -- from the wire -------------------------------------------------------------------------------

    def parse(self, payload: Mapping[str, Any]) -> Inbound | ApprovalClick | None:
        # python-telegram-bot builds an update without checking field types, so a wrong-typed field fails
        # wherever it is first read: everything that reads the update counts as parsing it.
        refuse_unreadable(payload)
        try:
            return self._read(payload)
        except _UNREADABLE as exc:
            raise MalformedPayload(f"not a Telegram update: {type(exc).__name__}: {exc}") from None

    def _read(self, payload: Mapping[str, Any]) -> Inbound | ApprovalClick | None:
        update = Update.de_json(dict(payload), None)
        if update.callback_query is not None:
            return self._parse_click(update.callback_query, payload)
        message = update.message
        if message is None or message.from_user is None:
            return None
        if message.reply_to_message is not None and self._asks_reason(message.reply_to_message):
            return self._parse_reason(message, message.reply_to_message, payload)
        return self._parse_message(message, payload)

    def _asks_reason(self, replied: Message) -> bool:
        """The bot's own prompt for a reason for denying (`ask_reason`)."""
        author = replied.from_user
        return author is not None and str(author.id) == self._me().user_id and \
            REASON_PROMPT in (replied.text or "").lower()

    def _parse_reason(self, message: Message, prompt: Message, payload: Mapping[str, Any]) -> ApprovalClick | None:
        """A reply to the bot's prompt for a reason: a denial with those words, if the gateway finds the prompt was
        put to this person for a card still open (`ApprovalFlow`); never a turn."""
        sender = message.from_user
        if sender is None or sender.is_bot:
            return None
        _check_ids(sender.id, message.chat.id, message.message_id, prompt.message_id, message.message_thread_id)
        address = ChatAddress(bot_id=self.bot_id, platform="telegram", channel_id=str(message.chat.id),
                              thread_id=str(message.message_thread_id) if message.is_topic_message else None,
                              is_direct=message.chat.type == ChatType.PRIVATE)
        replier = Speaker(platform="telegram", platform_user_id=str(sender.id), handle=sender.username,
                          display_name=sender.full_name)
        return ApprovalClick(approval_id="", verb="deny", clicker=replier, reason=message.text or message.caption or "",
                             reason_reply=True, card=MessageRef(address=address, message_id=str(prompt.message_id)),
                             logical_id=f"telegram:{self.bot_id}:reason:{message.chat.id}:{message.message_id}",
                             raw=payload)

    def _parse_click(self, query: CallbackQuery, payload: Mapping[str, Any]) -> ApprovalClick | None:
        verb = _VERBS.get((query.data or "")[:3])
        message = query.message
        if verb is None or message is None or query.from_user.is_bot:
            return None
        _check_ids(query.from_user.id, message.chat.id, message.message_id, getattr(message, "message_thread_id", None))
        text_id(query.id, "callback_query.id")  # typed str, but python-telegram-bot keeps whatever type came
        chat = message.chat
        # an inaccessible (too old) message carries no thread; only a topic message's thread is the conversation's
        topic = message.message_thread_id if isinstance(message, Message) and message.is_topic_message else None
        address = ChatAddress(bot_id=self.bot_id, platform="telegram", channel_id=str(chat.id),
                              thread_id=str(topic) if topic is not None else None,
                              is_direct=chat.type == ChatType.PRIVATE)
        user = query.from_user
        clicker = Speaker(platform="telegram", platform_user_id=str(user.id), handle=user.username,
                          display_name=user.full_name, is_bot=user.is_bot)
        target, _, choice = (query.data or "")[3:].partition(":")  # a question's button: `qc:<question>:<option>`
        return ApprovalClick(approval_id=target, verb=verb, clicker=clicker,
                             card=MessageRef(address=address, message_id=str(message.message_id)),
                             choice=int(choice) if verb == "choose" and choice.isdigit() else None,
                             logical_id=f"telegram:{self.bot_id}:callback:{query.id}", raw=payload)

    def _parse_message(self, message: Message, payload: Mapping[str, Any]) -> Inbound | None:
        me = self._me()
        sender = message.from_user
        if sender is None or sender.is_bot or str(sender.id) == me.user_id:
            return None
        _check_ids(sender.id, message.chat.id, message.message_id, message.message_thread_id)
        text = message.text or message.caption or ""
        addressed = self._addressed(message, text)
        address = ChatAddress(bot_id=self.bot_id, platform="telegram", channel_id=str(message.chat.id),
                              thread_id=str(message.message_thread_id) if message.is_topic_message else None,
                              is_direct=message.chat.type == ChatType.PRIVATE)
        speaker = Speaker(platform="telegram", platform_user_id=str(sender.id), handle=sender.username,
                          display_name=sender.full_name, is_bot=sender.is_bot)
        return Inbound(address=address, speaker=speaker, text=self._strip_mention(text),
                       message_id=str(message.message_id), addressed=addressed,
                       attachments=_attachments(message), raw=payload)

    def _addressed(self, message: Message, text: str) -> Addressed | None:
        me = self._me()
        if message.chat.type == ChatType.PRIVATE:
            return "direct"
        if message.chat.type not in _GROUPS:
            return None
        entities = message.parse_entities() if message.text else message.parse_caption_entities()
        handle = f"@{me.handle}".lower() if me.handle else None
        for entity, value in entities.items():
            if entity.type == MessageEntity.MENTION and value.lower() == handle:
                return "mention"
            if entity.type == MessageEntity.TEXT_MENTION and entity.user and str(entity.user.id) == me.user_id:
                return "mention"
            if entity.type == MessageEntity.BOT_COMMAND and handle and value.lower().endswith(handle):
                return "command"
        replied = message.reply_to_message
        if replied and replied.from_user and str(replied.from_user.id) == me.user_id:
            return "reply"
        return None

    def _strip_mention(self, text: str) -> str:
        handle = self._me().handle
        if not handle:
            return text.strip()
        words = [w for w in text.split(" ") if w.lower() != f"@{handle}".lower()]
        stripped = " ".join(words)
        if stripped.startswith("/"):
            command, _, rest = stripped.partition(" ")
            stripped = f"{command.split('@', 1)[0]} {rest}".strip()
        return stripped.strip()

    def _me(self) -> BotIdentity:
        if self.identity is None:
            raise RuntimeError(f"adapter for bot {self.bot_id!r} parsed a message before open()")
        return self.identity

    def verify(self, route: WebhookRoute, headers: Mapping[str, str], body: bytes) -> None:
        if not self._webhook_secret:
            raise VerificationError(f"bot {self.bot_id!r} has no webhook secret; every call is refused")
        given = {k.lower(): v for k, v in headers.items()}.get(SECRET_HEADER.lower(), "")
        if not hmac.compare_digest(given.encode(), self._webhook_secret.encode()):
            raise VerificationError("missing or wrong X-Telegram-Bot-Api-Secret-Token")

    async def read_webhook(self, route: WebhookRoute, headers: Mapping[str, str], body: bytes) -> Mapping[str, Any]:
        """A webhook call's body is the update itself."""
        if route != "webhook":
            raise MalformedPayload(f"telegram takes no {route} calls")
        return read_json_object(body, "body")

    # -- to the wire ---------------------------------------------------------------------------------

    def address_of(self, chat: str, thread: str | None) -> ChatAddress | None:
        """A private chat's id is its person's user id, a positive number; groups' ids are negative."""
        return ChatAddress(bot_id=self.bot_id, platform="telegram", channel_id=chat, thread_id=thread,
                           is_direct=not chat.startswith("-"))

    async def send(self, address: ChatAddress, text: str, *, markup: InlineKeyboardMarkup | None = None) -> MessageRef:
        thread = int(address.thread_id) if address.thread_id else None

        async def post(body: str, parse_mode: str | None) -> Message:
            return await self._bot.send_message(chat_id=address.channel_id, text=body, parse_mode=parse_mode,
                                                message_thread_id=thread, reply_markup=markup)
        message = await self._formatted("sendMessage", post, text)
        return MessageRef(address=address, message_id=str(message.message_id))

    async def send_live(self, address: ChatAddress, text: str) -> MessageRef:
        return await self.send(address, text, markup=STOP_BUTTON)

    async def edit_live(self, ref: MessageRef, text: str) -> None:
        await self.edit(ref, text, markup=STOP_BUTTON)

    async def send_rated(self, address: ChatAddress, text: str, *, run_id: int) -> MessageRef:
        return await self.send(address, text, markup=_feedback_buttons(run_id))

    async def edit_rated(self, ref: MessageRef, text: str, *, run_id: int) -> None:
        await self.edit(ref, text, markup=_feedback_buttons(run_id))

    async def edit(self, ref: MessageRef, text: str, *, markup: InlineKeyboardMarkup | None = None) -> None:
        """Without `markup` the message's buttons go (a live reply's Stop, once it is finished)."""
        async def change(body: str, parse_mode: str | None) -> Any:
            return await self._bot.edit_message_text(chat_id=ref.address.channel_id,
                                                     message_id=int(ref.message_id), text=body,
                                                     parse_mode=parse_mode, reply_markup=markup)
        try:
            await self._formatted("editMessageText", change, text)
        except BadRequest as exc:
            if "message is not modified" not in exc.message.lower():
                raise

    async def post_file(self, address: ChatAddress, file: OutgoingFile) -> str:
        """A picture (`sendPhoto`, up to 10 MB) or else a document (`sendDocument`, up to 50 MB), in the topic."""
        thread = int(address.thread_id) if address.thread_id else None
        caption = render_telegram_plain(file.caption)[:MessageLimit.CAPTION_LENGTH] if file.caption else None
        if file.mime_type in PHOTO_TYPES and len(file.data) <= FileSizeLimit.PHOTOSIZE_UPLOAD:
            message = await self._call("sendPhoto", lambda: self._bot.send_photo(
                chat_id=address.channel_id, photo=file.data, filename=file.name, caption=caption,
                message_thread_id=thread))
        else:
            message = await self._call("sendDocument", lambda: self._bot.send_document(
                chat_id=address.channel_id, document=file.data, filename=file.name, caption=caption,
                message_thread_id=thread))
        return str(message.message_id)

    async def fetch_file(self, file: FileRef, *, max_bytes: int) -> bytes:
        """`getFile`, then the file path's download; the Bot API hands bots files up to 20 MB."""
        cap = min(max_bytes, FileSizeLimit.FILESIZE_DOWNLOAD)
        if file.size is not None and file.size > cap:
            raise FileUnreadable(too_large(file.name, file.size, cap))
        try:
            found = await self._call("getFile", lambda: self._bot.get_file(file.file_id))
            if found.file_size is not None and found.file_size > cap:
                raise FileUnreadable(too_large(file.name, found.file_size, cap))
            data = await found.download_as_bytearray()
        except BadRequest as exc:  # a NetworkError in python-telegram-bot's hierarchy, but an answer: a refusal
            raise FileUnreadable(f"{file.name}: Telegram would not hand it to the bot ({exc.message})") from None
        except NetworkError:  # TimedOut included: no answer came
            raise FileUnreadable(f"{file.name}: Telegram did not answer the download just now (sending it again "
                                 "may work)") from None
        except TelegramError as exc:
            raise FileUnreadable(f"{file.name}: Telegram would not hand it to the bot ({exc.message})") from None
        if len(data) > cap:
            raise FileUnreadable(too_large(file.name, len(data), cap))
        return bytes(data)

    def shows_drafts(self, address: ChatAddress) -> bool:
        """Drafts are for private chats (`sendMessageDraft`, Bot API 9.3); groups keep a message and its edits."""
        return address.is_direct

    async def show_draft(self, address: ChatAddress, draft_id: int, text: str) -> None:
        thread = int(address.thread_id) if address.thread_id else None

        async def draft(body: str, parse_mode: str | None) -> bool:
            return await self._bot.send_message_draft(chat_id=int(address.channel_id), draft_id=draft_id, text=body,
                                                      parse_mode=parse_mode, message_thread_id=thread)
        await self._formatted("sendMessageDraft", draft, text)

    async def react(self, ref: MessageRef, emoji: str) -> None:
        """`setMessageReaction` (Bot API 7.0): one emoji, or none to take the bot's reaction away."""
        await self._call("setMessageReaction", lambda: self._bot.set_message_reaction(
            chat_id=ref.address.channel_id, message_id=int(ref.message_id), reaction=[emoji] if emoji else []))

    async def show_typing(self, address: ChatAddress) -> None:
        thread = int(address.thread_id) if address.thread_id else None
        await self._call("sendChatAction", lambda: self._bot.send_chat_action(chat_id=address.channel_id,
                                                            action=ChatAction.TYPING,
                                                            message_thread_id=thread))

    async def post_approval(self, address: ChatAddress, card: ApprovalCard) -> MessageRef:
        thread = int(address.thread_id) if address.thread_id else None

        async def post(body: str, parse_mode: str | None) -> Message:
            return await self._bot.send_message(chat_id=address.channel_id, text=body, parse_mode=parse_mode,
                                                message_thread_id=thread, reply_markup=_buttons(card))
        message = await self._formatted("sendMessage", post, card.summary)
        return MessageRef(address=address, message_id=str(message.message_id))

    async def update_approval(self, ref: MessageRef, state: ApprovalCard | ApprovalOutcome) -> None:
        if not isinstance(state, ApprovalCard):
            await self.edit(ref, state.summary)  # an edit without reply_markup removes the buttons
            return

        async def change(body: str, parse_mode: str | None) -> Any:
            return await self._bot.edit_message_text(chat_id=ref.address.channel_id, message_id=int(ref.message_id),
                                                     text=body, parse_mode=parse_mode, reply_markup=_buttons(state))
        await self._formatted("editMessageText", change, state.summary)

    async def post_question(self, address: ChatAddress, card: QuestionCard) -> MessageRef:
        buttons = [[InlineKeyboardButton(choice, callback_data=f"{_DATA['choose']}{card.question_id}:{index}")]
                   for index, choice in enumerate(card.choices)]
        return await self.send(address, card.text, markup=InlineKeyboardMarkup(buttons))

    async def close_question(self, ref: MessageRef, text: str) -> None:
        await self.edit(ref, text)  # without reply_markup: the buttons go

    async def answer_click(self, click: ApprovalClick, notice: str, *, refused: bool = False) -> None:
        """Every callback query is answered, or the user's button keeps spinning; refusals as an alert. A reason
        given as a reply has no query: a refusal answers the reply in the chat, anything else is on the card."""
        if click.reason_reply:
            if refused:
                await self._reply(click, notice)
            return
        query_id = str(click.raw["callback_query"]["id"])
        await self._call("answerCallbackQuery",
                         lambda: self._bot.answer_callback_query(query_id, text=notice[:200], show_alert=refused))

    async def ask_reason(self, click: ApprovalClick, card: ApprovalCard) -> MessageRef | None:
        """No text input here: a prompt in the card's conversation, asking the clicker to reply with the reason
        (`ForceReply`, selective: the @-named person's client opens the reply), and the click answered."""
        address = click.card.address
        who = f"@{click.clicker.handle}" if click.clicker.handle else click.clicker.display_name
        text = (f"{who}, {REASON_PROMPT} `{card.tool_name}`: the agent reads it. The card's buttons still work.")
        thread = int(address.thread_id) if address.thread_id else None

        async def post(body: str, parse_mode: str | None) -> Message:
            return await self._bot.send_message(
                chat_id=address.channel_id, text=body, parse_mode=parse_mode, message_thread_id=thread,
                reply_markup=ForceReply(selective=True, input_field_placeholder="Your reason for denying"))
        message = await self._formatted("sendMessage", post, text)
        await self._call("answerCallbackQuery", lambda: self._bot.answer_callback_query(
            str(click.raw["callback_query"]["id"]), text="Reply to my message with your reason."))
        return MessageRef(address=address, message_id=str(message.message_id))

    async def _reply(self, click: ApprovalClick, notice: str) -> None:
        """`notice` in answer to the person's own message (a reason reply refused)."""
        address = click.card.address
        answered = int(click.raw["message"]["message_id"])
        thread = int(address.thread_id) if address.thread_id else None
        await self._call("sendMessage", lambda: self._bot.send_message(
            chat_id=address.channel_id, text=notice, message_thread_id=thread,
            reply_parameters=ReplyParameters(message_id=answered)))

    async def _formatted(self, method: str, call: Callable[[str, str | None], Awaitable[T]], text: str) -> T:
        """Send as HTML; when Telegram cannot parse the entities, send the plain text instead."""
        try:
            return await self._call(method, lambda: call(render_telegram_html(text), ParseMode.HTML))
        except BadRequest as exc:
            if "can't parse entities" not in exc.message.lower():
                raise
            log.warning("telegram rejected the formatting for bot %r; sending plain text", self.bot_id)
            return await self._call(method, lambda: call(render_telegram_plain(text), None))

    async def _call(self, method: str, request: Callable[[], Awaitable[T]], *, attempts: int = 5) -> T:
        """Run one Bot API call (`method`, as the Bot API names it), waiting out 429 `retry_after` as Telegram asks.

        Each 429 and each other failure is told to `on_api_trouble`.
        """
        for attempt in range(1, attempts + 1):
            try:
                return await request()
            except RetryAfter as exc:
                self._trouble(method, "rate_limited")
                if attempt == attempts:
                    raise
                delay = _retry_after(exc)
                log.warning("telegram asked bot %r to wait %.0fs (429)", self.bot_id, delay)
            except TelegramError:
                self._trouble(method, "error")
                raise
            await asyncio.sleep(min(delay, MAX_RETRY_AFTER))
        raise AssertionError("unreachable")

    def _trouble(self, method: str, kind: Literal["rate_limited", "error"]) -> None:
        if self._on_api_trouble is not None:
            self._on_api_trouble(method, kind)

    async def _register_webhook(self) -> None:
        await self._call("setWebhook", lambda: self._bot.set_webhook(url=self.webhook_url or "",
                                                       secret_token=self._webhook_secret,
                                                       allowed_updates=list(ALLOWED_UPDATES)))
        log.info("telegram webhook registered for bot %r", self.bot_id)


class Polling:
    """Long polling for one bot: an update is confirmed (by the next offset) only after `deliver` committed it."""

    def __init__(self, bot: Bot, call: Call, *, poll_timeout: int) -> None:
        self._bot = bot
        self._call = call
        """The adapter's Bot API runner, which waits out 429s."""
        self._poll_timeout = poll_timeout

    async def run_transport(self, deliver: Deliver) -> None:
        """Poll until cancelled.

        Updates are fetched as raw JSON so that one unreadable update reaches the parser (and is kept
        as rejected) instead of failing the whole batch inside `Bot.get_updates`. A batch's updates of different
        chats are committed at once, one chat's in order (`InOrder`); the next poll confirms them all.
        """
        await self._call("deleteWebhook", lambda: self._bot.delete_webhook(drop_pending_updates=False))
        offset: int | None = None
        while True:
            poll = partial(self._bot.do_api_request, "getUpdates",
                           api_kwargs={"offset": offset, "timeout": self._poll_timeout,
                                       "allowed_updates": list(ALLOWED_UPDATES)},
                           read_timeout=self._poll_timeout + 10)
            try:
                updates = await self._call("getUpdates", poll)
            except TimedOut:
                continue
            async with InOrder() as order:  # a failure ends polling, the batch unconfirmed
                for update in updates:
                    await order.submit(_chat_of(update), partial(deliver, _readable(update)))
            for update in updates:
                offset = _next_offset(offset, update.get("update_id") if is_object(update) else None)


def _check_ids(*ids: Any) -> None:
    """Raises `MalformedPayload` unless each id is a whole number (None for an absent topic), as Telegram's are:
    python-telegram-bot keeps whatever type came, and "[1]" made a chat id would be refused turn after turn."""
    for value in ids:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise MalformedPayload(f"a Telegram id is a {type(value).__name__}, not a whole number")


def _readable(update: Any) -> Mapping[str, Any]:
    """A polled update as the parser gets it, or the record of one that cannot be stored as it is."""
    if not is_object(update):
        return unreadable_frame(repr(update), "update is not an object")
    try:
        check_storable(update, "update")
    except MalformedPayload as exc:
        return unreadable_frame(repr(update), str(exc))
    return update


def _next_offset(offset: int | None, update_id: Any) -> int | None:
    """The offset that confirms an update just committed.

    Update ids increase one by one (https://core.telegram.org/bots/api#update), so an update without a
    usable id is confirmed as the one after the last: it must not be fetched again and again. A guess
    too low only fetches it once more; it never confirms an update not yet seen.
    """
    if isinstance(update_id, int) and not isinstance(update_id, bool) and 0 <= update_id < MAX_UPDATE_ID:
        return max(offset or 0, update_id + 1)
    return offset + 1 if offset is not None else None


def _chat_of(update: Any) -> str:
    """The chat an update belongs to (a message's, or a clicked card's); "" when it names none."""
    if not is_object(update):
        return ""
    query = update.get("callback_query")
    message = update.get("message") or (query.get("message") if is_object(query) else None)
    chat = message.get("chat") if is_object(message) else None
    chat_id = chat.get("id") if is_object(chat) else None
    return str(chat_id) if isinstance(chat_id, int | str) else ""


STOP_BUTTON = InlineKeyboardMarkup([[InlineKeyboardButton("⏹ Stop", callback_data="st:")]])
"""On a live reply while its turn runs: the conversation is the message's own, so the data names nothing."""


def _feedback_buttons(run_id: int) -> InlineKeyboardMarkup:
    """👍 and 👎 under an answer; the data names the run, which the gateway holds to the clicked message's chat."""
    return InlineKeyboardMarkup([[InlineKeyboardButton("👍", callback_data=f"{_DATA['thumbs_up']}{run_id}"),
                                  InlineKeyboardButton("👎", callback_data=f"{_DATA['thumbs_down']}{run_id}")]])


def _buttons(card: ApprovalCard) -> InlineKeyboardMarkup:
    """Approving in the first row, denying in the second: four labels side by side would be cut on a phone."""
    rows: list[list[InlineKeyboardButton]] = [[], []]
    for verb, label in card.buttons:
        rows[verb in ("deny", "ask_reason")].append(
            InlineKeyboardButton(f"{_ICONS[verb]}{label}", callback_data=f"{_DATA[verb]}{card.approval_id}"))
    return InlineKeyboardMarkup([row for row in rows if row])


def _attachments(message: Message) -> tuple[FileRef, ...]:
    """python-telegram-bot checks no field's type: each is read as `file_ref` reads any payload's."""
    files: list[FileRef | None] = []
    if message.document:
        doc = message.document
        files.append(file_ref(file_id=doc.file_id, name=doc.file_name or "document", mime_type=doc.mime_type,
                              size=doc.file_size))
    if message.photo:
        photo = message.photo[-1]
        files.append(file_ref(file_id=photo.file_id, name="photo.jpg", mime_type="image/jpeg", size=photo.file_size))
    if message.voice:  # Opus in Ogg, named so: transcription services tell the format by the name
        voice = message.voice
        files.append(file_ref(file_id=voice.file_id, name="voice.ogg", mime_type=_audio_type(voice.mime_type, "ogg"),
                              size=voice.file_size, duration=voice.to_dict().get("duration")))
    if message.audio:
        audio = message.audio
        files.append(file_ref(file_id=audio.file_id, name=audio.file_name or "audio.mp3",
                              mime_type=_audio_type(audio.mime_type, "mpeg"), size=audio.file_size,
                              duration=audio.to_dict().get("duration")))
    return tuple(file for file in files if file is not None)


def _audio_type(given: Any, default: str) -> str:
    """The sender's content type when it says audio; Telegram's own for a voice note (or an audio) otherwise."""
    return given if isinstance(given, str) and given.lower().startswith("audio/") else f"audio/{default}"


def _retry_after(exc: RetryAfter) -> float:
    value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)
