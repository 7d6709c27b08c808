"""Everything refused when a config is applied, before anything runs: the registry's checks, and what
each platform can answer for a binding's `channel_tools` and instruction placeholders."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from adapters.base import CHANNEL_LOOKUPS, ChannelLookup
from capabilities import default_registry
from capabilities.registry import ALL_SCOPES, Registry
from capabilities.registry.config_errors import Loc
from capabilities.subagents import SubagentsConfig
from capabilities.subagents.agent_files import read_agent_files
from gateway.agents.placeholders import PLACEHOLDERS, unknown_placeholders
from gateway.checks.bots import bot_problems
from gateway.checks.browsing import browser_problems
from gateway.checks.mcp_servers import mcp_problems
from gateway.checks.paths import relative_path_problems
from gateway.checks.resources import resource_problems
from gateway.checks.workspaces import sandbox_problems
from gateway.config.schema import AgentSpec, ConfigError, GatewayConfig, Settings, reference_problems
from gateway.config.source import ConfigSource, parse_problem


def apply_problems(config: GatewayConfig, registry: Registry) -> list[str]:
    """Every problem that makes `config` unappliable, each naming its field and the fix."""
    problems = (registry.validate_config(config) + resource_problems(config) + mcp_problems(config, registry)
                + sandbox_problems(config) + browser_problems(config) + bot_problems(config)
                + relative_path_problems(config))
    for i, agent in enumerate(config.agents):
        problems += delegation_problems(config, agent, f"agents[{i}]")
    for i, bot in enumerate(config.bots):
        path = f"bots[{i}].binding"
        grant = bot.binding.channel_tools or {}
        listed = grant.get("tools")
        tools = listed if isinstance(listed, list) else []
        supported = CHANNEL_LOOKUPS.get(bot.platform, frozenset())
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
    return default_registry(granted_scopes=granted_scopes(settings), fetch_local=settings.dev_web_fetch_allow_local)


def check_appliable(config: GatewayConfig, registry: Registry) -> None:
    """Raise `ConfigError` listing every problem of a config built in code (a file is checked by
    `gateway/checks/report.py`, with its lines), one per line, bots and agents by name."""
    problems = reference_problems(config) + [parse_problem(p) for p in apply_problems(config, registry)]
    if problems:
        source = ConfigSource(data=config.model_dump(mode="json"))
        raise ConfigError("the config cannot be applied:\n" + "\n".join(f"  {line}" for line in source.lines(problems)))


def delegation_problems(config: GatewayConfig, agent: AgentSpec, path: str) -> list[str]:
    """The catalog's refusals for `subagents`: delegates named where nothing will call them, delegates that
    do not exist, lending what the agent does not hold, menu keys and models nobody configured."""
    entry = next(((j, e) for j, e in enumerate(agent.capabilities) if e.id == "subagents"), None)
    if entry is None:
        if agent.subagents:
            return [f"{path}.subagents: names delegates ({', '.join(agent.subagents)}) but the agent does not bind "
                    "'subagents'; add it to capabilities, or remove the list"]
        return []
    j, binding = entry
    where = f"{path}.capabilities[{j}]"
    try:
        settings = SubagentsConfig.model_validate(binding.config)
    except ValidationError:
        return []  # the registry reports the config itself
    if not binding.enabled:
        named = [*agent.subagents, *(s.name for s in settings.inline), *settings.delegates, *settings.agent_folders]
        if named:
            return [f"{where}.enabled: 'subagents' is disabled but still names delegates ({', '.join(named)}); a "
                    "disabled binding calls none of them, so remove them, or enable the binding"]
        return []
    agents = [a.name for a in config.agents]
    problems = []
    for k, name in enumerate(agent.subagents):
        if name not in agents:
            problems.append(f"{path}.subagents[{k}]: {name!r} is not an agent in this config; known: "
                            f"{', '.join(agents)}")
        elif name in agent.subagents[:k]:
            problems.append(f"{path}.subagents[{k}]: {name!r} is named twice")
    bound = {e.id for e in agent.capabilities if e.enabled}
    for k, shared in enumerate(settings.share_with_delegates):
        if shared == "subagents":
            problems.append(f"{where}.config.share_with_delegates[{k}]: 'subagents' cannot be shared; whether a "
                            "delegate may delegate is decided by its own spec")
        elif shared not in bound:
            problems.append(f"{where}.config.share_with_delegates[{k}]: {shared!r} is not bound by this agent; it "
                            "can only lend a capability it holds itself")
    return problems + _delegate_problems(config, agent, settings, f"{where}.config")


def model_references(config: GatewayConfig) -> list[tuple[Loc, str]]:
    """Every place the config names a model (a profile or a model string): each agent's own, and what its
    `subagents` binding names for specialists, menus and agent files."""
    references: list[tuple[Loc, str]] = []
    for i, agent in enumerate(config.agents):
        references.append((("agents", i, "model"), agent.model))
        for j, entry in enumerate(agent.capabilities):
            if entry.id == "subagents":
                references += _delegate_models(entry.config, ("agents", i, "capabilities", j, "config"))
    return references


def _delegate_models(raw: Mapping[str, Any], where: Loc) -> list[tuple[Loc, str]]:
    try:
        settings = SubagentsConfig.model_validate(raw)
    except ValidationError:
        return []  # the registry reports the config itself
    models: list[tuple[Loc, str]] = [((*where, "inline", k, "model"), s.model) for k, s in enumerate(settings.inline)]
    models += [((*where, "models", key) + (() if isinstance(option, str) else ("model",)),
                option if isinstance(option, str) else option.model) for key, option in settings.models.items()]
    models += [((*where, "agent_overrides", name, "model"), o.model) for name, o in settings.agent_overrides.items()
               if o.model is not None]
    return models


def _delegate_problems(config: GatewayConfig, agent: AgentSpec, settings: SubagentsConfig, where: str) -> list[str]:
    problems = []
    for k, specialist in enumerate(settings.inline):
        if specialist.name in [s.name for s in settings.inline[:k]]:
            problems.append(f"{where}.inline[{k}].name: {specialist.name!r} is used twice")
        elif specialist.name in agent.subagents:
            problems.append(f"{where}.inline[{k}].name: {specialist.name!r} is also pinned in subagents; give each "
                            "delegate a name of its own")
    keys = ", ".join(settings.models) or "none"
    controls = [(f"{where}.inline[{k}]", s) for k, s in enumerate(settings.inline)]
    controls += [(f"{where}.delegates.{name}", c) for name, c in settings.delegates.items()]
    for field, control in controls:
        problems += [f"{field}.models[{m}]: {key!r} is not a key of {where}.models (keys: {keys})"
                     for m, key in enumerate(control.models) if key not in settings.models]
    files = {file.name for file in read_agent_files(settings.agent_folders)}
    for name in settings.delegates:
        if name not in agent.subagents and name not in files:
            problems.append(f"{where}.delegates.{name}: {name!r} is neither pinned in subagents nor defined in "
                            "agent_folders (an inline specialist carries its controls itself)")
    for k, folder in enumerate(settings.agent_folders):
        if not Path(folder).is_dir():
            problems.append(f"{where}.agent_folders[{k}]: {folder!r} is not a folder")
    problems += [f"{where}.agent_overrides.{name}: no agent file defines {name!r}"
                 for name in settings.agent_overrides if name not in files]
    return problems
