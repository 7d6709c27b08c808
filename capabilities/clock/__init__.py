"""`clock`: writes the current date and time into the instructions, so the agent stops guessing them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

from capabilities.registry import CapabilityDef, Deferred
from storage.recurrence import zone_problem


class ClockConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    timezone: str = "UTC"
    """Any IANA name, e.g. `Europe/Warsaw`."""

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        if problem := zone_problem(value):
            raise ValueError(problem)
        return value


CAPABILITY = CapabilityDef(id="clock", name="Date and time", category="utility", tools=(), config=ClockConfig,
                           description="Puts the current date and time into the instructions.",
    build=Deferred("capabilities.clock.build:build"))
