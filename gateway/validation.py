"""Everything refused when a config is applied, before anything runs: the registry's checks, and what
each platform can answer for a binding's `channel_tools` and instruction placeholders."""

from __future__ import annotations

from collections.abc import Mapping
from typing import get_args

from adapters.base import ChannelLookup
from adapters.mattermost_directory import MattermostDirectory
from adapters.slack_directory import SlackDirectory
from adapters.telegram_directory import TelegramDirectory
from capabilities import default_registry
from capabilities.registry import ALL_SCOPES, Registry
from gateway.channel_context import PLACEHOLDERS, unknown_placeholders
from gateway.config import ConfigError, GatewayConfig, Settings

DIRECTORY_SUPPORT: Mapping[str, frozenset[ChannelLookup]] = {"telegram": TelegramDirectory.supports,
                                                              "slack": SlackDirectory.supports,
                                                              "mattermost": MattermostDirectory.supports}
"""The channel lookups each platform's adapter answers (its `Directory.supports`)."""


def apply_problems(config: GatewayConfig, registry: Registry) -> list[str]:
    """Every problem that makes `config` unappliable, each naming its field and the fix."""
    problems = registry.validate_config(config)
    for i, bot in enumerate(config.bots):
        path = f"bots[{i}].binding"
        grant = bot.binding.channel_tools or {}
        tools = grant.get("tools") if isinstance(grant.get("tools"), list) else []
        supported = DIRECTORY_SUPPORT.get(bot.platform, frozenset())
        unanswerable = [tool for tool in tools if tool in get_args(ChannelLookup) and tool not in supported]
        if unanswerable:
            answers = ", ".join(sorted(supported)) or "none of them"
            problems.append(f"{path}.channel_tools.tools: {bot.platform} cannot answer "
                            f"{', '.join(unanswerable)} (it answers {answers}); remove them from this bot's grant")
        for name in unknown_placeholders(bot.binding.instructions):
            problems.append(f"{path}.instructions: {{{name}}} is not a placeholder; use one of "
                            f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    return problems


def granted_scopes(settings: Settings) -> frozenset[str]:
    """The scopes this deployment grants (`GATEWAY_GRANTED_SCOPES`, comma-separated); unset: all eight."""
    if settings.granted_scopes is None:
        return ALL_SCOPES
    scopes = frozenset(s.strip() for s in settings.granted_scopes.split(",") if s.strip())
    unknown = sorted(scopes - ALL_SCOPES)
    if unknown:
        raise ConfigError(f"GATEWAY_GRANTED_SCOPES: {', '.join(unknown)} is not a scope; known: "
                          f"{', '.join(sorted(ALL_SCOPES))}")
    return scopes


def deployment_registry(settings: Settings) -> Registry:
    return default_registry(granted_scopes=granted_scopes(settings))


def check_appliable(config: GatewayConfig, registry: Registry) -> None:
    """Raise `ConfigError` listing every problem, as `gateway check`, `apply` and `serve` report it."""
    problems = apply_problems(config, registry)
    if problems:
        raise ConfigError("the agent specs cannot be applied:\n" + "\n".join(f"  {p}" for p in problems))
