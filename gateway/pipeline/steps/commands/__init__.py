"""The commands a person can say to the gateway itself, one module each (`call.py` says what an entry is): answered
by the command step (`steps/command.py`) without a model run, and listed in the platforms' command menus.

A command is its word as the whole message, with or without a leading `/` (`link` and `forget` take one more word).
In a DM it is always one; in a group only where the bot is addressed (named, replied to, in a thread it answers
in), with the mention stripped by the adapter. An `at_once` command is taken into the inbox in a lane of its own
(`inbox.AT_ONCE_LANE`), so it is answered while a turn of its conversation runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from adapters.base import MenuCommand
from gateway.pipeline.steps.commands.call import ChatCommand, CommandCall, Handler, say
from gateway.pipeline.steps.commands.help import HELP
from gateway.pipeline.steps.commands.new import NEW
from gateway.pipeline.steps.commands.people import FORGET, LINK, UNLINK
from gateway.pipeline.steps.commands.retry import RETRY
from gateway.pipeline.steps.commands.status import STATUS
from gateway.pipeline.steps.commands.stop import STOP
from gateway.pipeline.steps.commands.usage import USAGE

COMMANDS: tuple[ChatCommand, ...] = (
    NEW,     # a fresh conversation in this chat
    RETRY,   # the last turn again, its answer replaced
    HELP,    # the commands, and what the agent can do
    STOP,    # the running turn ends, on whichever replica runs it
    STATUS,  # agent, model, context, a turn running or waiting
    USAGE,   # this person's tokens and cost, and the limits that apply
    LINK,    # link, unlink, forget: the person's accounts and memory (gateway/people/commands.py)
    UNLINK,
    FORGET,
)


def words(commands: Sequence[ChatCommand] = COMMANDS) -> frozenset[str]:
    """Every command's word: what a running turn never takes as a steered message."""
    return frozenset(command.name for command in commands)


def at_once_words(commands: Sequence[ChatCommand] = COMMANDS) -> frozenset[str]:
    """The words intake takes into the at-once lane."""
    return frozenset(command.name for command in commands if command.at_once)


def menu(commands: Sequence[ChatCommand] = COMMANDS) -> tuple[MenuCommand, ...]:
    """What the platforms' command menus list."""
    return tuple(MenuCommand(name=command.name, summary=command.summary, direct_only=command.direct_only)
                 for command in commands if command.menu)


__all__ = ["COMMANDS", "ChatCommand", "CommandCall", "Handler", "at_once_words", "menu", "say", "words"]
