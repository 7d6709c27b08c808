"""The seams between the gateway and a platform adapter, one small protocol per consumer.

An adapter implements the protocols its platform can honour and nothing as a no-op: an ability a
platform lacks (a typing indicator, readable threads, something to release on close) is its own
`runtime_checkable` protocol, which the consumer checks with `isinstance`. A bot without a socket or
polling connection has `transport = None`. The channel lookups stay in `adapters.base.Directory`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from adapters.base import (
    ApprovalCard,
    ApprovalClick,
    ApprovalOutcome,
    BotIdentity,
    ChatAddress,
    Deliver,
    FileRef,
    HistoryItem,
    Inbound,
    MenuCommand,
    MessageRef,
    OutgoingFile,
    Platform,
    PlatformLimits,
    QuestionCard,
    Speaker,
)

WebhookRoute = Literal["webhook", "actions", "events", "interactions", "commands"]
"""The last segment of a platform's HTTP route (`/telegram/{bot}/webhook`, `/slack/{bot}/interactions`, …);
`commands` takes slash commands (Slack's, Mattermost's custom ones), answered with an empty 200."""


class WebhookAnswer(Exception):
    """A verified webhook call that is answered with `body` (HTTP 200) and delivers nothing.

    Slack's URL verification gets its challenge back; a Mattermost outgoing webhook from a channel the
    bot is not in gets a `text` that Mattermost posts there, telling people why the bot cannot answer.
    """

    def __init__(self, body: Mapping[str, Any], reason: str) -> None:
        super().__init__(reason)
        self.body = body


class Transport(Protocol):
    """A socket or polling connection that brings a bot its events (the supervisor holds it)."""

    async def run_transport(self, deliver: Deliver) -> None:
        """Hold one connection, handing each payload to `deliver`; returns or raises when it ends."""
        ...


class Connection(Protocol):
    """What the supervisor keeps alive: the bot's sign-in and, where it has one, its transport."""

    platform: Platform
    bot_id: str
    identity: BotIdentity | None
    """Set by `open`; `None` until the bot is connected."""

    @property
    def transport(self) -> Transport | None:
        """`None` where events arrive over a webhook instead; read-only here, so an adapter may hold its own
        transport class."""
        ...

    async def open(self) -> BotIdentity:
        """Connect the client and learn the bot's own identity (needed before `parse`)."""
        ...


@runtime_checkable
class ListsCommands(Protocol):
    """A platform where a bot registers its commands, so the client's menu offers them (Telegram's
    `setMyCommands`, Mattermost's custom slash commands); called once the bot is signed in."""

    async def register_commands(self, commands: Sequence[MenuCommand]) -> None:
        """Register `commands` in the platform's menu; raises when the platform refuses (the caller logs it once)."""
        ...


@runtime_checkable
class Closable(Protocol):
    """An adapter that holds a client to release when the gateway stops."""

    async def close(self) -> None: ...


class Parser(Protocol):
    """Reads the payloads every transport of a platform hands over (intake, router)."""

    def parse(self, payload: Mapping[str, Any]) -> Inbound | ApprovalClick | None:
        """Read one platform event. Pure: no I/O. Raises `MalformedPayload`; `None` means ignore."""
        ...


class Addresses(Protocol):
    """Names a chat as the platform does, for a post no message asked for (a schedule, a webhook, a reminder)."""

    def address_of(self, chat: str, thread: str | None) -> ChatAddress | None:
        """Chat `chat` (in thread `thread`) as this bot posts there; None while the bot cannot tell yet (Slack: its
        workspace, known once signed in)."""
        ...


@runtime_checkable
class FollowsThreads(Protocol):
    """A platform whose threads are conversations: a reply in a thread the bot answered in addresses it,
    and a bot first named mid-thread reads what came before."""

    async def read_thread(self, address: ChatAddress, *, limit: int) -> list[HistoryItem]:
        """The thread so far, oldest first, at most `limit` messages."""
        ...


class Webhook(Protocol):
    """What the HTTP server needs to take a platform's webhook call (gateway/server/http.py)."""

    platform: Platform
    identity: BotIdentity | None

    def verify(self, route: WebhookRoute, headers: Mapping[str, str], body: bytes) -> None:
        """Check a call to `route` over its raw headers and body, before anything else reads it.

        Raises:
            VerificationError: the credential is missing or wrong, or the body is too unreadable to carry one.
        """
        ...

    async def read_webhook(self, route: WebhookRoute, headers: Mapping[str, str], body: bytes) -> Mapping[str, Any]:
        """The payload `parse` reads, from a verified call to `route`.

        Raises:
            MalformedPayload: the body is not what `route` takes (it is kept as rejected and acknowledged).
            WebhookAnswer: the call is answered with a body of its own and delivers nothing.
        """
        ...


class ChatOutput(Protocol):
    """Posting and editing messages (live replies)."""

    limits: PlatformLimits

    async def send(self, address: ChatAddress, text: str) -> MessageRef: ...

    async def edit(self, ref: MessageRef, text: str) -> None: ...


@runtime_checkable
class PostsOnce(Protocol):
    """A platform that makes a post idempotent by a key the client chooses (Mattermost's `pending_post_id`)."""

    async def send_once(self, address: ChatAddress, text: str, *, key: str) -> MessageRef:
        """Post `text`; posting again with the same `key` soon after returns the first post instead."""
        ...


@runtime_checkable
class FindsOwnPosts(Protocol):
    """A platform where the bot reads back what it posted: a retried turn finds the placeholder an attempt cut
    short left unrecorded, instead of posting a second one beside it."""

    async def find_own_post(self, address: ChatAddress, text: str, *, after: str) -> MessageRef | None:
        """The bot's own newest message in the conversation reading exactly `text`, posted after message `after`."""
        ...


@runtime_checkable
class PostsFiles(Protocol):
    """A platform the bot posts files to (charts, images), in the conversation's thread."""

    limits: PlatformLimits
    """`max_file_bytes` is the largest file `post_file` takes."""

    async def post_file(self, address: ChatAddress, file: OutgoingFile) -> str:
        """Upload `file` and post it in `address`'s thread with its caption; returns the platform's id of the post.

        Raises:
            FileUnreadable: the platform refused the file (too large, or the bot may not post files); the message
                says so in words for people.
        """
        ...


@runtime_checkable
class ReadsFiles(Protocol):
    """A platform whose attachments the bot downloads with its own token."""

    async def fetch_file(self, file: FileRef, *, max_bytes: int) -> bytes:
        """The file's bytes, at most `max_bytes`.

        Raises:
            FileUnreadable: the bot may not read it, it is gone, or it is larger than `max_bytes`.
        """
        ...


@runtime_checkable
class ShowsTyping(Protocol):
    """A platform that shows bots typing."""

    async def show_typing(self, address: ChatAddress) -> None: ...


@runtime_checkable
class OffersStop(Protocol):
    """A live reply's message carries a Stop button while its turn runs; a click on it parses as an `ApprovalClick`
    with verb `stop`, verified as an approval click is. A plain `edit` takes the button away."""

    async def send_live(self, address: ChatAddress, text: str) -> MessageRef: ...

    async def edit_live(self, ref: MessageRef, text: str) -> None: ...


@runtime_checkable
class AsksFeedback(Protocol):
    """An answer's last message carries 👍 / 👎 for its run (a binding's `feedback`): Slack's feedback block,
    buttons elsewhere. A click parses as an `ApprovalClick` with verb `thumbs_up` or `thumbs_down` and the run's id,
    verified as an approval click is."""

    async def send_rated(self, address: ChatAddress, text: str, *, run_id: int) -> MessageRef: ...

    async def edit_rated(self, ref: MessageRef, text: str, *, run_id: int) -> None:
        """`ref` shows `text` with the buttons; a reply still streaming (Slack) stops with them."""
        ...


@runtime_checkable
class Reacts(Protocol):
    """A platform where the bot reacts to a person's message (Telegram's `setMessageReaction`): the first sign where
    typing does not show, when the bot's binding says `reaction`."""

    reacts: bool
    """The binding asks for it; False: `react` is never called."""

    async def react(self, ref: MessageRef, emoji: str) -> None:
        """Set the bot's reaction on the person's message `ref` to `emoji`; "" takes it away."""
        ...


@runtime_checkable
class ShowsStatus(Protocol):
    """A platform that shows what the bot is doing in a status line under a thread (Slack's assistant status),
    until the bot posts there or the status is set to ""."""

    status_lasts: float
    """Seconds a status shows unless replaced or cleared (Slack: two minutes); it is set again this often."""

    def shows_status(self, address: ChatAddress) -> bool:
        """Whether `address` has a status line (Slack: a thread)."""
        ...

    async def set_status(self, address: ChatAddress, status: str) -> None:
        """Show `status` (with the platform's loading animation) under the thread; "" clears it."""
        ...


@runtime_checkable
class StreamsReplies(Protocol):
    """A platform that streams a reply into one message of its own (Slack's `chat.startStream`, `appendStream`,
    `stopStream`): `edit` of a streaming message appends what is new, and falls back to a plain edit of the same
    message when the text does not continue what was streamed or the platform no longer streams it."""

    async def open_stream(self, address: ChatAddress, recipient: Speaker) -> MessageRef:
        """The reply's message, streaming and empty, for `recipient`; a plain "…" post where the platform refuses
        the stream (the same message the retry finds and edits either way)."""
        ...

    async def close_stream(self, ref: MessageRef, text: str) -> None:
        """`ref` shows `text` and streams no more: the rest appended as the stream stops, or the text edited in."""
        ...


@runtime_checkable
class ShowsDrafts(Protocol):
    """A platform that shows a reply as a draft while it is written, nothing posted until it is done (Telegram's
    `sendMessageDraft` in private chats): no placeholder a crash could strand, and no edits."""

    draft_lasts: float
    """Seconds a draft shows unless it is sent again (Telegram: 30)."""

    def shows_drafts(self, address: ChatAddress) -> bool:
        """Whether `address` takes drafts (Telegram: private chats)."""
        ...

    async def show_draft(self, address: ChatAddress, draft_id: int, text: str) -> None:
        """Show `text` as draft `draft_id` (the same id animates the change)."""
        ...


class Cards(Protocol):
    """Approval cards with buttons (approvals)."""

    async def post_approval(self, address: ChatAddress, card: ApprovalCard) -> MessageRef:
        """Post the card with its buttons (`ApprovalCard.buttons`), in the conversation's thread."""
        ...

    async def update_approval(self, ref: MessageRef, state: ApprovalCard | ApprovalOutcome) -> None:
        """Edit the bot's own message `ref` to the card's state: a pending card with its buttons (a parked run's
        placeholder taking the card, or who approved so far), or its outcome, which removes the buttons."""
        ...

    async def answer_click(self, click: ApprovalClick, notice: str, *, refused: bool = False) -> None:
        """Tell only the person who clicked (ephemeral, or a callback alert); called once per click."""
        ...

@runtime_checkable
class AsksReasons(Protocol):
    """A platform where a denial can carry the person's reason ("Deny with reason…" on a card)."""

    async def ask_reason(self, click: ApprovalClick, card: ApprovalCard) -> MessageRef | None:
        """For a verified "Deny with reason…" click: open the platform's text input for the clicker (Slack's modal,
        Mattermost's interactive dialog), whose submission comes back parsed as a `deny` click carrying `reason`
        (None returned); or, on a platform without one (Telegram), post a prompt in the card's conversation that
        the clicker answers by replying to it (`REASON_PROMPT`), and return it. Answers the click either way."""
        ...


@runtime_checkable
class AsksChoices(Protocol):
    """A platform that shows a question's options as buttons (Telegram's inline keyboard, Slack's actions block,
    Mattermost's attachment actions), each click verified as an approval click is."""

    choice_buttons: int
    """Options shown as buttons at most; a question offering more lists them, numbered, in its text."""

    async def post_question(self, address: ChatAddress, card: QuestionCard) -> MessageRef:
        """Post the question with one button per option, in the conversation's thread."""
        ...

    async def close_question(self, ref: MessageRef, text: str) -> None:
        """Edit the bot's question `ref` to `text`, its buttons gone (answered or expired)."""
        ...


class Chat(ChatOutput, Cards, Protocol):
    """Everything said in a conversation: answers, live edits and approval cards."""
