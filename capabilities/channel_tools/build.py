"""The tools and builder of `channel_tools`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/channel_tools/__init__.py`."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic_ai import RunContext
from pydantic_ai.capabilities import Capability

from adapters.base import ChannelInfo, Directory, DirectoryRefused
from capabilities.channel_tools import ChannelToolsConfig, Limit
from capabilities.run import BuildContext
from capabilities.run.one_line import flatten, person_line
from capabilities.run.tool_replies import function_toolset, retry_or_text

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelLookups:
    """The four lookups, bound to one room of one bot; the model never chooses either."""

    directory: Directory
    channel_id: str
    default_limit: int

    async def get_channel_info(self, ctx: RunContext[Any]) -> str:
        """Describe the channel this conversation is taking place in: name, purpose, topic and size.

        Use it to learn where you are before answering questions about this channel. It reads
        nothing that was said here; `read_channel_history` does that, where it is offered.

        Returns:
            One `field: value` line each for name, kind (channel or direct message), purpose,
            topic and members, with `(none)` for an empty field. If the bot cannot see the channel,
            a single line saying so.
        """
        info = await self._ask(ctx, lambda: self.directory.channel_info(self.channel_id))
        return info if isinstance(info, str) else _info_lines(info)

    async def list_channel_members(self, ctx: RunContext[Any], limit: Limit | None = None) -> str:
        """List the people in this channel, by display name and handle.

        Use it to find out who is here, for example whom to mention. The list can be partial:
        some platforms show a bot only some of the members (on Telegram, the administrators).

        Args:
            limit: How many people to list, from 1 to 200; when left out, the binding's
                `default_limit` (20 unless the operator changed it).

        Returns:
            A first line `Listed N of M people in this channel.` (M is the channel's size where the
            platform reports it), then one line per person: `Display Name (@handle)`, with
            `[bot]` after bots. If the bot cannot see the channel, a single line saying so.
        """
        count = limit or self.default_limit
        people = await self._ask(ctx, lambda: self.directory.channel_members(self.channel_id, limit=count))
        if isinstance(people, str):
            return people
        total = await self._member_count()
        header = f"Listed {len(people)} of {total if total is not None else 'an unknown number of'} people " \
                 "in this channel."
        return "\n".join([header, *(person_line(p) for p in people)])

    async def search_channels(self, ctx: RunContext[Any], query: str, limit: Limit | None = None) -> str:
        """Find other channels this bot can see by name or purpose, without reading them.

        Use it to point someone to the right channel. It searches only channels the bot is in
        or can see, and reads no messages.

        Args:
            query: Words to look for in channel names and purposes, e.g. `release`.
            limit: How many channels to return, from 1 to 200; when left out, the binding's
                `default_limit` (20 unless the operator changed it).

        Returns:
            One line per channel: `#name [id]: purpose (N members)`, best match first; or
            `No channel matches '<query>'.` when there is none.
        """
        count = limit or self.default_limit
        found = await self._ask(ctx, lambda: self.directory.search_channels(query, limit=count))
        if isinstance(found, str):
            return found
        if not found:
            return f"No channel matches {flatten(query, limit=100)!r}."
        return "\n".join(_search_line(channel) for channel in found)

    async def read_channel_history(self, ctx: RunContext[Any], limit: Limit | None = None) -> str:
        """Read the most recent messages in this channel, newest last.

        Use it to catch up on what was said here before you were asked. It reads this channel
        only, as the bot sees it.

        Args:
            limit: How many of the most recent messages to read, from 1 to 200; when left out,
                the binding's `default_limit` (20 unless the operator changed it).

        Returns:
            One line per message, oldest first and newest last: `[message id] Name (@handle): text`,
            with line breaks inside a message shown as ` ⏎ ` and long messages cut with `…`;
            `No messages.` for an empty channel. If the bot cannot see the channel, a single line
            saying so.
        """
        count = limit or self.default_limit
        items = await self._ask(ctx, lambda: self.directory.channel_history(self.channel_id, limit=count))
        if isinstance(items, str):
            return items
        lines = [f"[{flatten(i.message_id, limit=40)}] {person_line(i.speaker)}: {flatten(i.text, limit=1000)}"
                 for i in items]
        return "\n".join(lines) or "No messages."

    async def _ask(self, ctx: RunContext[Any], lookup: Callable[[], Awaitable[T]]) -> T | str:
        """The lookup's answer; a refusal as text, a transient failure as a (budgeted) retry prompt."""
        try:
            return await lookup()
        except DirectoryRefused as exc:
            return f"This bot cannot see this channel ({flatten(str(exc), limit=200)})."
        except Exception as exc:  # anything else is the platform failing to answer right now
            log.warning("channel lookup in %s failed: %s: %s", self.channel_id, type(exc).__name__, exc)
            return retry_or_text(ctx, f"The chat platform did not answer ({type(exc).__name__}). Try once "
                                      "more; if it fails again, say that the lookup is unavailable.")

    async def _member_count(self) -> int | None:
        if "get_channel_info" not in self.directory.supports:
            return None
        try:
            return (await self.directory.channel_info(self.channel_id)).member_count
        except Exception:  # the count only decorates the list; the list itself was answered
            return None


def _info_lines(info: ChannelInfo) -> str:
    fields = (("name", info.name), ("kind", "direct message" if info.is_direct else "channel"),
              ("purpose", info.purpose), ("topic", info.topic),
              ("members", None if info.member_count is None else str(info.member_count)))
    return "\n".join(f"{name}: {flatten(value) or '(none)'}" for name, value in fields)


def _search_line(channel: ChannelInfo) -> str:
    size = f" ({channel.member_count} members)" if channel.member_count is not None else ""
    purpose = flatten(channel.purpose, limit=200) or "(no purpose)"
    return f"#{flatten(channel.name, limit=80)} [{flatten(channel.channel_id, limit=40)}]: {purpose}{size}"


def build(context: BuildContext[ChannelToolsConfig]) -> Capability[Any] | None:
    """The granted lookups the bot's directory answers, bound to the admitting room; nothing when none is left."""
    config, directory = context.config, context.directory
    granted = [tool for tool in config.tools if tool in directory.supports]
    if not granted:
        return None
    lookups = ChannelLookups(directory=directory, channel_id=context.run.address.channel_id,
                             default_limit=config.default_limit)
    return Capability(toolsets=[function_toolset([getattr(lookups, tool) for tool in granted],
                                                 toolset_id="channel_tools")])
