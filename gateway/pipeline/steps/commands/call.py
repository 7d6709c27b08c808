"""What a command is, and what its handler is called with: the command step (`steps/command.py`) finds the entry by
its word and calls it; each command's module builds its handler from the steps' services."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import HANDLED, Delivery, Handled


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandCall:
    """One command said in a chat: the delivery that carried it, the words after the command's own, and the table
    it was found in (what `help` lists)."""

    delivery: Delivery
    argument: str
    commands: Sequence[ChatCommand]


Handler = Callable[[CommandCall], Awaitable[Handled | None]]
"""`Handled`: answered; None: not a command where it was said (a group's `unlink`), on to the next step."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatCommand:
    """A word a person says to the gateway itself: answered without a model run, kept out of the history."""

    name: str
    """The word, lower case; said as the whole message, with or without a leading `/`."""
    summary: str
    """One line: what `help` says of it, and the platforms' command menus."""
    build: Callable[[StepServices], Handler]
    at_once: bool = False
    """Answered while a turn of the conversation runs (its own lane of the inbox), not queued behind it."""
    menu: bool = True
    """Listed in the platforms' command menus (Telegram's `setMyCommands`, Slack's slash commands)."""
    direct_only: bool = False
    """A command of direct messages: in a group its word is an ordinary message (the handler says so by returning
    None), and the group's menu leaves it out."""


async def say(call: CommandCall, text: str, services: StepServices) -> Handled:
    """Answer the command in its conversation, once: a retried delivery that already answered says nothing again
    (running a command twice could spend a link code, or start afresh twice)."""
    delivery = call.delivery
    if delivery.item.reply_message_id is None:
        ref = await delivery.adapter.send(delivery.inbound.address, text)
        await services.inbox.remember_reply(delivery.item.id, ref.message_id)
    return HANDLED
