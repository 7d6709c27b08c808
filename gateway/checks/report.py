"""`gateway check` and `gateway serve` read a config file the same way: every problem in one pass, each at
its line and column, bots and agents by name; what this machine lacks to serve it (unset keys and tokens)
apart, since `check` may run where the server does not."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from capabilities.config_errors import Problem
from capabilities.registry import Registry
from gateway.agents.models import ModelResolver
from gateway.checks.validation import apply_problems, model_references
from gateway.config.schema import (
    AgentSpec,
    ConfigError,
    GatewayConfig,
    read_source,
    reference_name,
    template_references,
    validate_source,
)
from gateway.config.secrets import SecretSource
from gateway.config.source import ConfigSource, parse_problem

THINKING = "thinking"
"""The capability that only asks the model for a setting: it does nothing on a model that does not reason."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """What is wrong with a config file, sorted by who must act on it."""

    source: ConfigSource
    config: GatewayConfig | None
    errors: tuple[Problem, ...] = ()
    """The file is wrong: nothing runs it, wherever it runs."""
    unset: tuple[Problem, ...] = ()
    """Keys and tokens this machine lacks: `gateway serve` refuses to start, `gateway check` warns."""
    warnings: tuple[Problem, ...] = ()
    """Settings that will silently do nothing."""

    def lines(self, problems: tuple[Problem, ...], *, label: str = "") -> list[str]:
        """One line per problem, in the order of the file: `FILE:LINE:COLUMN: [label]bots['tg'].token: message`."""
        return self.source.lines(problems, label=label)


def check_file(path: Path, *, registry: Registry, secrets: SecretSource) -> Report:
    """Every problem of the config file at `path`, found without connecting anywhere."""
    try:
        source = read_source(path)
    except ConfigError as exc:
        return Report(source=ConfigSource(data=None), config=None, errors=(Problem(loc=(), message=str(exc)),))
    config, problems = validate_source(source)
    if config is None:
        return Report(source=source, config=None, errors=(*problems, *_agent_problems(source, registry)))
    models = ModelResolver(config.models, secrets)
    wrong, unset = model_problems(config, models)
    errors = [*problems, *(parse_problem(p) for p in apply_problems(config, registry)), *wrong]
    return Report(source=source, config=config, errors=tuple(errors),
                  unset=(*unset_secrets(config, secrets), *unset), warnings=tuple(silent_settings(config, models)))


def model_problems(config: GatewayConfig, models: ModelResolver) -> tuple[list[Problem], list[Problem]]:
    """Each profile and each model the config names, resolved as a turn would: (wrong names, unset keys)."""
    wrong: list[Problem] = []
    unset: list[Problem] = []
    for name, profile in config.models.items():
        problem = models.problem(name)
        if problem is not None:
            loc = ("models", name) if isinstance(profile, str) else ("models", name, "api_key")
            (unset if problem.environmental else wrong).append(Problem(loc=loc, message=problem.message))
    for loc, name in model_references(config):
        if name in config.models or name in models.names:
            continue
        problem = models.problem(name)
        if problem is None:
            continue
        if problem.environmental:
            unset.append(Problem(loc=loc, message=problem.message))
        elif ":" not in name:
            profiles = ", ".join(sorted(config.models)) or "none defined"
            wrong.append(Problem(loc=loc, message=f"{name!r} is neither a profile in models ({profiles}) nor a "
                                                  f"model string such as 'openai-chat:gpt-4o' ({problem.message})"))
        else:
            wrong.append(Problem(loc=loc, message=problem.message))
    return wrong, unset


def unset_secrets(config: GatewayConfig, secrets: SecretSource) -> list[Problem]:
    """Each bot or MCP server credential whose `${ENV_VAR}` is set neither in the environment nor in the
    secrets file."""
    problems = []
    for i, bot in enumerate(config.bots):
        fields = {"token": bot.token, "app_token": getattr(bot, "app_token", None),
                  "signing_secret": getattr(bot, "signing_secret", None),
                  "webhook_token": getattr(bot, "webhook_token", None)}
        for field, reference in fields.items():
            variable = reference_name(reference) if reference else None
            if variable is not None and not secrets.get(variable):
                problems.append(Problem(loc=("bots", i, field),
                                        message=f"{variable} is not set in the environment or the secrets file"))
    for i, server in enumerate(config.mcp_servers):
        for field, values in (("headers", server.headers), ("env", server.env)):
            problems += [Problem(loc=("mcp_servers", i, field, name),
                                 message=f"{variable} is not set in the environment or the secrets file")
                         for name, value in values.items() for variable in template_references(value)
                         if not secrets.get(variable)]
    return problems


def silent_settings(config: GatewayConfig, models: ModelResolver) -> list[Problem]:
    """Settings that are valid but will do nothing as the config stands."""
    problems = []
    for i, agent in enumerate(config.agents):
        problems += _thinking_without_reasoning(config, agent, i, models)
    bound = {use.server for agent in config.agents for use in agent.mcp_servers if use.enabled}
    problems += [Problem(loc=("mcp_servers", i, "name"),
                         message=f"no agent binds {server.name!r}, so its tools reach nobody; name it in an agent's "
                                 "mcp_servers, or remove it")
                 for i, server in enumerate(config.mcp_servers) if server.name not in bound]
    for i, bot in enumerate(config.bots):
        binding = bot.binding
        if binding.allow and binding.access == "open":
            problems.append(Problem(loc=("bots", i, "binding", "allow"),
                                    message="lists people, but access is 'open', so everyone is answered; set "
                                            "access: allowlist to answer only them"))
        if binding.approvals.approvers and binding.approvals.who != "approvers":
            problems.append(Problem(loc=("bots", i, "binding", "approvals", "approvers"),
                                    message=f"lists approvers, but who is {binding.approvals.who!r}, so they are not "
                                            "asked; set who: approvers to ask them"))
    return problems


def _thinking_without_reasoning(config: GatewayConfig, agent: AgentSpec, index: int,
                                models: ModelResolver) -> list[Problem]:
    entry = next(((j, e) for j, e in enumerate(agent.capabilities) if e.id == THINKING and e.enabled), None)
    profile = models.profile(agent.model) if entry is not None else None
    if entry is None or profile is None or models.problem(agent.model) is not None:
        return []
    if profile.get("supports_thinking") or profile.get("thinking_always_enabled"):
        return []
    profile_spec = config.models.get(agent.model)
    model = agent.model if profile_spec is None else f"{agent.model} ({getattr(profile_spec, 'model', profile_spec)})"
    return [Problem(loc=("agents", index, "capabilities", entry[0]),
                    message=f"'thinking' does nothing on {model}: pydantic-ai does not know that model as "
                            "one that reasons, so no thinking setting is sent; remove it, or use a reasoning model")]


def _agent_problems(source: ConfigSource, registry: Registry) -> list[Problem]:
    """With the file's schema broken, the capability checks of each agent that is itself well formed, so one
    pass reports both."""
    agents = source.data.get("agents") if isinstance(source.data, dict) else None
    problems: list[Problem] = []
    for i, raw in enumerate(agents if isinstance(agents, list) else []):
        try:
            agent = AgentSpec.model_validate(raw)
        except ValidationError:
            continue  # its schema errors are already reported
        problems += [parse_problem(p) for p in registry.validate_agent(agent, path=f"agents[{i}]")]
    return problems
