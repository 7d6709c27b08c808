"""Normalized chat types: everything past an adapter's `parse` reads these values, never a raw platform payload.

The protocols an adapter implements are in `adapters/protocols.py`; `Directory` is here, beside the
values it answers with.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, get_args

Platform = Literal["slack", "mattermost", "telegram"]
Addressed = Literal["mention", "reply", "direct", "thread", "command", "schedule"]
"""Why the bot answers a message; `None` on an `Inbound` means it was not addressed. `schedule`: nobody wrote it, a
schedule, reminder or webhook fired (`gateway/pipeline/firings.py`)."""

ApiTrouble = Callable[[str, Literal["rate_limited", "error"]], None]
"""Told of each platform API call that got a 429 (`rate_limited`) or failed (`error`), by its method name:
the Bot API method, the Slack Web API method, or Mattermost's `VERB /route`. A closed set, fit for a label."""

ChannelLookup = Literal["get_channel_info", "list_channel_members", "search_channels", "read_channel_history"]

CHANNEL_LOOKUPS: Mapping[Platform, frozenset[ChannelLookup]] = {
    "slack": frozenset(get_args(ChannelLookup)),
    "mattermost": frozenset(get_args(ChannelLookup)),
    "telegram": frozenset({"get_channel_info", "list_channel_members"}),
}
"""The lookups each platform's `Directory` answers (its `supports`), readable without loading any SDK.
The Telegram Bot API has no directory of chats and cannot read earlier messages."""


class VerificationError(Exception):
    """A webhook call failed verification; the message names why, never the secret."""


class MalformedPayload(Exception):
    """A platform payload could not be read as any known event."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatAddress:
    bot_id: str
    """The configured bot's name: one adapter instance per bot."""
    platform: Platform
    channel_id: str
    """The room: a Slack channel, a Mattermost channel, a Telegram chat."""
    thread_id: str | None = None
    """Slack thread root `ts`, Mattermost `root_id`, Telegram forum `message_thread_id`."""
    is_direct: bool = False

    @property
    def room_key(self) -> str:
        return f"{self.platform}:{self.bot_id}:{self.channel_id}"

    @property
    def conversation_key(self) -> str:
        return f"{self.room_key}:{self.thread_id or '-'}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Speaker:
    platform: Platform
    platform_user_id: str
    workspace: str = ""
    """Slack team id, Mattermost server host; empty on Telegram, whose user ids are global."""
    handle: str | None = None
    display_name: str
    is_bot: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FileRef:
    """A handle to a file on the platform; the bytes are fetched only when needed."""

    file_id: str
    name: str
    mime_type: str | None = None
    size: int | None = None
    duration: float | None = None
    """Seconds of sound, where the platform says (a Telegram voice note or audio, a Slack audio clip)."""

    @property
    def is_audio(self) -> bool:
        """A voice note or an audio file: what the adapter named with an `audio/` content type."""
        return (self.mime_type or "").lower().startswith("audio/")


@dataclass(frozen=True, slots=True, kw_only=True)
class OutgoingFile:
    """A file the bot posts into a conversation (a chart, a generated image), with its words beside it."""

    name: str
    data: bytes = field(repr=False)
    mime_type: str
    caption: str | None = None
    """Markdown shown with the file; None: the file alone."""
    key: str = ""
    """The same for every attempt to post this one file: a platform that dedupes posts by a client key uses it."""


class FileUnreadable(Exception):
    """The bot may not read a file a person sent (no scope, too large, gone); the message says which, for people."""


def byte_size(count: int) -> str:
    """"12 bytes", "3.4 KB", "12.0 MB": a size as people read it."""
    if count < 1024:
        return f"{count} bytes"
    if count < 2**20:
        return f"{count / 1024:.1f} KB"
    return f"{count / 2**20:.1f} MB"


def too_large(name: str, size: int, cap: int) -> str:
    """Why a file was not read or posted: it is larger than `cap` bytes."""
    return f"{name} is {byte_size(size)}, larger than the {byte_size(cap)} allowed here"


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageRef:
    address: ChatAddress
    message_id: str
    """Slack `ts`, Mattermost post id, Telegram `message_id`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Inbound:
    address: ChatAddress
    speaker: Speaker
    text: str
    """The words the model reads, with the bot's own mention stripped."""
    message_id: str
    addressed: Addressed | None
    attachments: tuple[FileRef, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict[str, Any], compare=False, repr=False)

    @property
    def logical_id(self) -> str:
        """The platform's identity of this message; the inbox dedupes on it."""
        return f"{self.address.room_key}:{self.message_id}"


CardOption = Literal["once", "conversation", "deny"]
"""What an approval card may offer (a binding's `approval_options`)."""
Verb = Literal["approve", "approve_conversation", "deny", "ask_reason", "stop", "choose", "thumbs_up",
               "thumbs_down"]
"""What a person did on a card: approved once, approved for the conversation, denied (with the reason they gave, if
any), or asked to give a reason for denying (the platform's text input opens: the verdict comes with what is sent);
or pressed Stop on a live reply, picked one of a question's options (`choose`, `ApprovalClick.choice`), or pressed
👍 / 👎 on an answer."""
FEEDBACK_VERBS: frozenset[Verb] = frozenset({"thumbs_up", "thumbs_down"})
"""The clicks that rate an answer: recorded with its run, never a turn."""
REASON_PROMPT = "reply to this message with your reason for denying"
"""Words in the bot's prompt for a reason where the platform has no text input (Telegram): a person's reply to a bot
message carrying them is read as a denial's reason (`ApprovalClick.reason_reply`), never as a turn."""
REASON_LIMIT = 2_000
"""Characters of a denial's reason kept and passed to the model."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalClick:
    """A verified button click: Approve or Deny on an approval card, Stop on a live reply (`card` is then the
    reply's message and `approval_id` is empty), or 👍 / 👎 on an answer (`card` is the answer's message and
    `approval_id` the run's id, which the gateway holds to the message's conversation)."""

    approval_id: str
    """The card's approval; "" for a reason given as a reply (the gateway finds it by `card`, its prompt); for
    `choose`, the question's id; the rated run's id for feedback."""
    verb: Verb
    clicker: Speaker
    card: MessageRef
    """The card clicked; for a reason reply, the bot's prompt replied to."""
    logical_id: str
    reason: str | None = None
    """A denial's reason, in the person's words: a submitted text input, or a reply to the prompt."""
    reason_reply: bool = False
    """The reason came as a reply to the bot's prompt `card`, not from the card or a text input it opened."""
    choice: int | None = None
    """For `choose`: the position of the option clicked, from 0, as the button carries it (checked by the gateway)."""
    raw: Mapping[str, Any] = field(default_factory=dict[str, Any], compare=False, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionCard:
    """A question put to a person with options to pick from, one button each; the click comes back as an
    `ApprovalClick` with verb `choose`, the question's id and the option's position."""

    question_id: str
    text: str
    """The question as the chat reads it (who asks whom, what)."""
    choices: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformLimits:
    max_text: int
    """Characters one posted message may carry."""
    max_edit_text: int
    """Characters an edit may carry (Slack's `chat.update` takes fewer than a post)."""
    edit_interval: float = 1.0
    """Seconds between live edits of one message."""
    max_file_bytes: int = 50 * 2**20
    """Bytes one file the bot posts may have."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MenuCommand:
    """A command the gateway answers, as a platform's command menu lists it."""

    name: str
    """The word, lower case, without a `/`."""
    summary: str
    direct_only: bool = False
    """Answered in direct messages only: left out of a group's menu."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BotIdentity:
    """Who the bot is on its platform, learned when the adapter opens."""

    user_id: str
    handle: str | None
    display_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryItem:
    """One earlier message of a room or thread, as the platform reports it."""

    speaker: Speaker
    text: str
    message_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelInfo:
    """A room as the platform describes it to the bot; text fields are the platform's, unfiltered."""

    channel_id: str
    name: str
    purpose: str | None = None
    """What the room is for (Slack purpose, Mattermost purpose, Telegram description)."""
    topic: str | None = None
    """What is being discussed now (Slack/Mattermost header or topic); `None` where the platform has none."""
    member_count: int | None = None
    is_direct: bool = False


class DirectoryRefused(Exception):
    """The platform refused a lookup (the bot cannot see that room); asking again will not help."""


class Directory(Protocol):
    """The channel lookups a platform can answer, through the bot's own token.

    `supports` is the contract: a lookup outside it is never offered to a model, so an
    implementation only has to answer what it declares. Every method raises `DirectoryRefused`
    for a room the bot cannot see; any other exception is a transient failure.
    """

    supports: frozenset[ChannelLookup]

    async def channel_info(self, channel_id: str) -> ChannelInfo: ...

    async def channel_members(self, channel_id: str, *, limit: int) -> list[Speaker]:
        """Up to `limit` people of the room (on Telegram, its administrators: the Bot API lists no others)."""
        ...

    async def search_channels(self, query: str, *, limit: int) -> list[ChannelInfo]:
        """Rooms the bot can see whose name or purpose matches `query`."""
        ...

    async def channel_history(self, channel_id: str, *, limit: int) -> list[HistoryItem]:
        """The `limit` most recent messages of the room, oldest first."""
        ...

    async def is_member(self, channel_id: str, user_id: str) -> bool:
        """Whether the person with this platform user id is in the room now, asked of the platform each time.

        Every platform answers it (it is not one of the lookups a binding grants): conversation search
        checks through it that a person still belongs to a room before showing them its threads."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalCard:
    """A tool call waiting for a person: what the agent wants to do, and for whom."""

    approval_id: str
    tool_name: str
    arguments: str
    """Readable and already truncated."""
    requester: str
    expires_at: datetime
    needed: int = 1
    """Distinct approvals required."""
    approved_by: tuple[str, ...] = ()
    """Who approved so far, in order, while more approvals are needed."""
    options: tuple[CardOption, ...] = ("once", "deny")

    @property
    def buttons(self) -> tuple[tuple[Verb, str], ...]:
        """The card's buttons, (verb, label), in the order every platform shows them. Never "for this conversation"
        where more than one approval is needed."""
        shown: list[tuple[Verb, str]] = []
        if "once" in self.options:
            shown.append(("approve", "Approve"))
        if "conversation" in self.options and self.needed == 1:
            shown.append(("approve_conversation", "Approve for this conversation"))
        if "deny" in self.options:
            shown.append(("deny", "Deny"))
            shown.append(("ask_reason", "Deny with reason…"))
        return tuple(shown)

    @property
    def summary(self) -> str:
        """Markdown shared by every platform's card."""
        rule = f" ({self.needed} approvals needed)" if self.needed > 1 else ""
        votes = f"{self.votes}\n" if self.approved_by else ""
        return (f"**Approval needed**{rule}: {self.requester} asked, and the agent wants to run "
                f"`{self.tool_name}` with:\n```\n{self.arguments}\n```\n"
                f"{votes}Expires {self.expires_at:%Y-%m-%d %H:%M} UTC.")

    @property
    def votes(self) -> str:
        """"Approved by Alice (1 of 2).", or "" before the first approval."""
        if not self.approved_by:
            return ""
        return f"Approved by {joined_names(self.approved_by)} ({len(self.approved_by)} of {self.needed})."


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalOutcome:
    card: ApprovalCard
    verdict: Literal["approved", "denied", "expired"]
    decided_by: str | None
    """Whoever decided; every approver, joined, when the card needed several."""
    decided_at: datetime
    grant_until: datetime | None = None
    """Approved for the conversation: the same call runs there without a card until then."""
    with_reason: bool = False
    """Denied with a reason (passed to the model, not shown on the card)."""

    @property
    def summary(self) -> str:
        when = f"{self.decided_at:%Y-%m-%d %H:%M} UTC"
        head = f"`{self.card.tool_name}` with:\n```\n{self.card.arguments}\n```\n"
        if self.verdict == "expired":
            closed = f"**Expired** — nobody decided in time; {head}was not run ({when})."
        elif self.grant_until is not None:
            closed = (f"**Approved for this conversation** by {self.decided_by} at {when}: {head}"
                      f"The same call runs here without asking until {self.grant_until:%Y-%m-%d %H:%M} UTC.")
        else:
            verb = "Approved" if self.verdict == "approved" else "Denied with a reason" if self.with_reason \
                else "Denied"
            closed = f"**{verb}** by {self.decided_by} at {when}: {head}".rstrip()
        if self.verdict == "approved" or not self.card.approved_by:
            return closed
        return f"{closed}\n{self.card.votes}"


def joined_names(names: Sequence[str]) -> str:
    """"Alice", "Alice and Bob", "Alice, Bob and Carol"."""
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


Deliver = Callable[[Mapping[str, Any]], Awaitable[None]]
"""Commits one raw payload to the inbox; a transport acknowledges only after it returns."""


class PlatformConfigError(Exception):
    """The platform refused the bot's settings (a revoked token, a wrong URL); retrying will not help."""
