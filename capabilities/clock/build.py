"""The tools and builder of `clock`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/clock/__init__.py`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability

from capabilities.clock import ClockConfig
from capabilities.run import BuildContext


@dataclass
class ClockCapability(AbstractCapability[Any]):
    timezone: str = "UTC"

    def get_instructions(self) -> Any:
        def now(_ctx: RunContext[Any]) -> str:
            moment = datetime.now(ZoneInfo(self.timezone))
            return f"The current date and time is {moment:%A, %d %B %Y, %H:%M} ({self.timezone})."
        return now


def build(context: BuildContext[ClockConfig]) -> ClockCapability:
    return ClockCapability(timezone=context.config.timezone)
