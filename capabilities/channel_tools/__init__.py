"""`channel_tools`: lookups in the chat room a run was admitted from, granted per bot binding.

The tools are bound server-side to that room (in a thread, to the channel holding it) and go
through the bot's own token, so the agent sees exactly what the bot sees and never names a channel.
Only what the platform's `Directory` declares is offered. Output is compact text, one line per item,
with every platform-supplied value flattened so a message body cannot forge extra lines.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from adapters.base import ChannelLookup
from capabilities.registry import CapabilityDef, Deferred, ToolInfo

MAX_LIMIT = 200
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT)]


class ChannelToolsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    tools: list[ChannelLookup] = Field(default_factory=list[ChannelLookup])
    """Which lookups this binding grants; nothing by default."""
    default_limit: int = Field(default=20, ge=1, le=MAX_LIMIT)
    """How many members, channels or messages a lookup returns when the model does not say."""

    @field_validator("tools")
    @classmethod
    def _once_each(cls, value: list[ChannelLookup]) -> list[ChannelLookup]:
        repeated = sorted({tool for tool in value if value.count(tool) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} listed more than once")
        return value


def offered(config: ChannelToolsConfig) -> list[str]:
    return list(config.tools)


CAPABILITY = CapabilityDef(
    id="channel_tools", name="Chat channel lookup", category="channels",
    description="Looks up the chat channel a conversation takes place in, through the bot's own token. "
                "Granted per bot binding, never in an agent spec.",
    tools=(ToolInfo(id="get_channel_info", summary="Describes the channel this conversation is taking place in."),
           ToolInfo(id="list_channel_members", summary="Lists the people in this channel."),
           ToolInfo(id="search_channels", summary="Finds other channels by name or purpose, without reading them."),
           ToolInfo(id="read_channel_history", summary="Reads the most recent messages in this channel, newest last.")),
    config=ChannelToolsConfig,
    build=Deferred("capabilities.channel_tools.build:build"), offered=offered, binding_only=True)
