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
Addressed = Literal["mention", "reply", "direct", "thread", "command"]
"""Why the bot answers a message; `None` on an `Inbound` means it was not addressed."""

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


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalClick:
    approval_id: str
    verb: Literal["approve", "deny"]
    clicker: Speaker
    card: MessageRef
    logical_id: str
    raw: Mapping[str, Any] = field(default_factory=dict[str, Any], compare=False, repr=False)


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

    @property
    def summary(self) -> str:
        when = f"{self.decided_at:%Y-%m-%d %H:%M} UTC"
        head = f"`{self.card.tool_name}` with:\n```\n{self.card.arguments}\n```\n"
        if self.verdict == "expired":
            closed = f"**Expired** — nobody decided in time; {head}was not run ({when})."
        else:
            verb = "Approved" if self.verdict == "approved" else "Denied"
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
