"""What a step is: one stage a claimed message passes, which either ends its delivery or hands it to the next."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from sqlalchemy import Connection

from adapters.base import Inbound
from adapters.platforms import PlatformAdapter
from gateway.agents.bindings import Binding
from gateway.pipeline.inbox import InboxItem
from gateway.pipeline.worker import Finish


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """A claimed message on its way through the steps: what was read for it once, before the first step."""

    item: InboxItem
    inbound: Inbound
    binding: Binding
    """The bot's binding as of the claim: the agent, who may talk to it, how fast."""
    adapter: PlatformAdapter
    retried: bool
    """An earlier attempt may have done part of this delivery's work."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Handled:
    """The delivery ends at this step."""

    finish: Finish | None = None
    """Its last writes, committed with the inbox item's completion; None: nothing more to write."""


HANDLED = Handled()


class Step(Protocol):
    async def handle(self, delivery: Delivery) -> Handled | None:
        """`Handled`: the delivery ends here; None: on to the next step."""
        ...


class ForOneSetting(Protocol):
    """A step with nothing to do for a binding whose one field has one value (no `limits`, `access: open`): the
    router skips it, without calling it, for such a delivery. Bindings are read at each claim, so a field `gateway
    apply` sets while the gateway runs holds from the next message."""

    skipped_when: ClassVar[tuple[str, object]]
    """(the binding spec's field, the value that leaves the step nothing to do)."""


@runtime_checkable
class LooksAhead(Protocol):
    """A step that can tell, from what the claim reads anyway, that it has nothing to do for a delivery."""

    def may_handle(self, connection: Connection, delivery: Delivery) -> bool:
        """Inside the claim's transaction (reads only): whether `handle` could end this delivery. False skips the
        step for it, so the step costs a plain turn no transaction of its own."""
        ...


async def refuse(delivery: Delivery, text: str) -> Handled:
    """End the delivery with `text` said in its conversation ("": silently), once: not again on a retry that
    already replied."""
    if text and delivery.item.reply_message_id is None:
        await delivery.adapter.send(delivery.inbound.address, text)
    return HANDLED
