"""The tools and builder of `thinking`, imported with its first build; its declaration (config, tools,
scopes) is `capabilities/thinking/__init__.py`."""

from __future__ import annotations

from pydantic_ai.capabilities import Thinking

from capabilities.run import BuildContext
from capabilities.thinking import ThinkingConfig


def build(context: BuildContext[ThinkingConfig]) -> Thinking:
    return Thinking(effort=context.config.effort or True)
