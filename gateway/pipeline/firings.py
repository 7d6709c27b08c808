"""Runs that start without a message: a schedule's, a reminder's or a webhook's firing.

A firing is an inbox item like any message. Its unique logical id names its source and its time (`schedule:<name>:
<due>`, `reminder:<id>:<due>`) or the sender's delivery id (`hook:<name>:<delivery>`), so two replicas and a restart
that both fire it store it once, and the worker delivers it once. Its payload is the gateway's own (no platform's
parser reads it): where it posts, as whom, and what — a text posted as written, or a prompt the agent runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal, cast

from adapters.base import ChatAddress, Inbound, Platform, Speaker
from gateway.pipeline.inbox import InboxItem
from storage.recurrence import readable

FIRING = "firing"
"""The payload's one key: what the firing carries."""
SOURCES = ("schedule:", "reminder:", "hook:")
"""How a firing's logical id begins; a platform's begins with its name (`telegram:`), so none is read as one."""
Mode = Literal["message", "run"]
"""`message`: the text is posted as written, no model run; `run`: the agent runs with the text as its prompt."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Firing:
    source: str
    """`schedule:<name>`, `reminder:<id>` or `hook:<name>`: what fired, for logs and metrics."""
    address: ChatAddress
    speaker: Speaker | None
    """Who set it (a reminder: the person, whose access, budget and notes apply); None: the operator (a schedule or
    a webhook of gateway.yaml), so in a group the room's notes, and nobody's in a DM."""
    mode: Mode
    text: str
    """Posted as written (`message`), or the run's prompt, framed already (`run`)."""
    due_at: datetime
    """When it was due (a webhook's: when it arrived)."""

    def payload(self) -> dict[str, Any]:
        return {FIRING: {"source": self.source, "mode": self.mode, "text": self.text, "due_at": self.due_at.isoformat(),
                         "address": asdict(self.address),
                         "speaker": None if self.speaker is None else asdict(self.speaker)}}

    def inbound(self, message_id: str) -> Inbound:
        """The firing as a turn's message: said by whoever set it, addressed because it was scheduled."""
        return Inbound(address=self.address, speaker=self.speaker or self.operator(), text=self.text,
                       message_id=message_id, addressed="schedule")

    def operator(self) -> Speaker:
        """The speaker of an operator's firing: an identity of its own, named for its source."""
        kind, _, name = self.source.partition(":")
        return Speaker(platform=self.address.platform, platform_user_id=self.source,
                       display_name=f"{'Webhook' if kind == 'hook' else 'Schedule'} {name}", is_bot=True)


def speaker_from(fields: Mapping[str, Any]) -> Speaker:
    """A `Speaker` stored as its fields (`dataclasses.asdict`): a firing's, or a reminder's."""
    return Speaker(platform=cast(Platform, fields["platform"]), platform_user_id=str(fields["platform_user_id"]),
                   workspace=str(fields.get("workspace") or ""), handle=fields.get("handle"),
                   display_name=str(fields["display_name"]), is_bot=bool(fields.get("is_bot")))


def address_from(fields: Mapping[str, Any]) -> ChatAddress:
    """A `ChatAddress` stored as its fields (`dataclasses.asdict`)."""
    return ChatAddress(bot_id=str(fields["bot_id"]), platform=cast(Platform, fields["platform"]),
                       channel_id=str(fields["channel_id"]), thread_id=fields.get("thread_id"),
                       is_direct=bool(fields.get("is_direct")))


def firing_of(item: InboxItem) -> Firing | None:
    """The firing an inbox item carries; None for a platform's event."""
    if not item.logical_id.startswith(SOURCES):
        return None
    fields: Mapping[str, Any] = item.payload[FIRING]
    speaker = fields.get("speaker")
    return Firing(source=str(fields["source"]), address=address_from(fields["address"]),
                  speaker=None if speaker is None else speaker_from(speaker), mode=cast(Mode, fields["mode"]),
                  text=str(fields["text"]), due_at=datetime.fromisoformat(fields["due_at"]))


def stamp(moment: datetime) -> str:
    """A due time in a logical id: UTC to the second, the same on every replica."""
    return moment.strftime("%Y%m%dT%H%M%SZ")


def late_note(due_at: datetime, timezone: str) -> str:
    """What a firing delivered late says about it."""
    return f"(This was due at {readable(due_at, timezone)}; it comes late because the gateway was not running then.)"
