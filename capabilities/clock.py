"""`clock`: writes the current date and time into the instructions, so the agent stops guessing them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability

from capabilities.context import BuildContext
from capabilities.registry import CapabilityDef


class ClockConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    timezone: str = "UTC"
    """Any IANA name, e.g. `Europe/Warsaw`."""

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA timezone name such as 'Europe/Warsaw'") from None
        return value


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


CAPABILITY = CapabilityDef(id="clock", name="Date and time", category="utility", tools=(), config=ClockConfig,
                           description="Puts the current date and time into the instructions.", build=build)
