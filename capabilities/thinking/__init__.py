"""`thinking`: asks the model to think before answering, at a portable effort level."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from capabilities.registry import CapabilityDef, Deferred


class ThinkingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    effort: Literal["minimal", "low", "medium", "high", "xhigh"] | None = None
    """Unset: the provider's own default effort. pydantic-ai maps a level the provider lacks to the
    nearest one it has, so a spec stays portable across a change of model."""


CAPABILITY = CapabilityDef(id="thinking", name="Thinking", category="reasoning", tools=(), config=ThinkingConfig,
                           description="Asks the model to think before answering: slower and more expensive, "
                                       "better on work with several steps.",
    build=Deferred("capabilities.thinking.build:build"))
