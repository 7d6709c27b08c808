"""`gateway check` and `gateway serve` read a config file the same way: every problem in one pass, each at
its line and column, bots and agents by name; what this machine lacks to serve it (unset keys and tokens)
apart, since `check` may run where the server does not."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from capabilities.memory_mem0 import Mem0Config
from capabilities.memory_mem0.access import Mem0Access, Mem0Refused, endpoint
from capabilities.registry import Registry
from capabilities.registry.config_errors import Problem
from gateway.checks.entries import entries_of
from gateway.checks.model_names import model_name_problems
from gateway.checks.model_setup import ModelSetup
from gateway.checks.resources import USED_BY
from gateway.checks.validation import apply_problems, model_references
from gateway.checks.workspaces import placement_problems
from gateway.config.schedules import hook_secret_problem
from gateway.config.schema import (
    AgentSpec,
    ConfigError,
    GatewayConfig,
    ModelStringProfile,
    Settings,
    capability_secrets,
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


DEV_FETCH_LOCAL = Problem(loc=(), message=(
    "GATEWAY_DEV_WEB_FETCH_ALLOW_LOCAL is set: web_fetch reads private, loopback and link-local addresses (cloud "
    "metadata stays refused); a setting for tests and development, never for a deployment; unset it"))


def check_file(path: Path, *, registry: Registry, secrets: SecretSource, settings: Settings | None = None) -> Report:
    """Every problem of the config file at `path`, found without connecting anywhere; `settings` are the
    process settings it would be served with (a development setting among them is a warning; its
    `MEM0_ALLOWED_HOSTS` is what self-hosted mem0 servers are checked against)."""
    try:
        source = read_source(path)
    except ConfigError as exc:
        return Report(source=ConfigSource(data=None), config=None, errors=(Problem(loc=(), message=str(exc)),))
    config, problems = validate_source(source)
    if config is None:
        return Report(source=source, config=None, errors=(*problems, *_agent_problems(source, registry)))
    models = ModelSetup(config.models, secrets)
    wrong, unset = model_problems(config, models)
    errors = [*problems, *(parse_problem(p) for p in apply_problems(config, registry)), *wrong]
    if settings is not None:
        errors += [parse_problem(p) for p in placement_problems(config, config_path=path, settings=settings)]
    mem0 = settings.mem0_access if settings is not None else None
    return Report(source=source, config=registry.stored(config), errors=tuple(errors),
                  unset=(*unset_secrets(config, secrets), *unset, *unlisted_mem0_hosts(config, mem0)),
                  warnings=(*dev_settings(settings), *silent_settings(config, models)))


def dev_settings(settings: Settings | None) -> list[Problem]:
    """Process settings that are for tests and development only."""
    return [DEV_FETCH_LOCAL] if settings is not None and settings.dev_web_fetch_allow_local else []


def model_problems(config: GatewayConfig, models: ModelSetup) -> tuple[list[Problem], list[Problem]]:
    """Each profile and each model the config names, resolved as a turn would: (wrong names, unset keys). A model
    id its provider does not have is the one problem told of its place: a key for it would not help."""
    unknown = model_name_problems(config, model_references(config))
    wrong, unset = _resolution_problems(config, models)
    told = {problem.loc for problem in unknown}
    return ([*unknown, *(p for p in wrong if p.loc not in told)], [p for p in unset if p.loc not in told])


def _resolution_problems(config: GatewayConfig, models: ModelSetup) -> tuple[list[Problem], list[Problem]]:
    wrong: list[Problem] = []
    unset: list[Problem] = []
    for name, profile in config.models.items():
        problem = models.problem(name)
        if problem is not None:
            loc = _profile_loc(name, profile)
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


def _profile_loc(name: str, profile: object) -> tuple[str, ...]:
    """Where a profile's problem is told: the string itself, the mapping's model id, or an endpoint's key."""
    if isinstance(profile, str):
        return ("models", name)
    return ("models", name, "model" if isinstance(profile, ModelStringProfile) else "api_key")


def unset_secrets(config: GatewayConfig, secrets: SecretSource) -> list[Problem]:
    """Each bot, webhook or MCP server credential and capability key whose variable is set neither in the environment
    nor in the secrets file."""
    problems = [Problem(loc=loc, message=f"{variable} is not set in the environment or the secrets file")
                for loc, variable in capability_secrets(config) if not secrets.get(variable)]
    for i, bot in enumerate(config.bots):
        fields = {"token": bot.token, "app_token": getattr(bot, "app_token", None),
                  "signing_secret": getattr(bot, "signing_secret", None),
                  "webhook_token": getattr(bot, "webhook_token", None)}
        for field, reference in fields.items():
            variable = reference_name(reference) if reference else None
            if variable is not None and not secrets.get(variable):
                problems.append(Problem(loc=("bots", i, field),
                                        message=f"{variable} is not set in the environment or the secrets file"))
    for i, hook in enumerate(config.hooks):
        variable = reference_name(hook.secret)
        value = secrets.get(variable) if variable is not None else None
        if variable is not None and not value:
            problems.append(Problem(loc=("hooks", i, "secret"),
                                    message=f"{variable} is not set in the environment or the secrets file"))
        elif value and (problem := hook_secret_problem(value)) is not None:
            problems.append(Problem(loc=("hooks", i, "secret"), message=f"{variable} {problem}"))
    for i, server in enumerate(config.mcp_servers):
        for field, values in (("headers", server.headers), ("env", server.env)):
            problems += [Problem(loc=("mcp_servers", i, field, name),
                                 message=f"{variable} is not set in the environment or the secrets file")
                         for name, value in values.items() for variable in template_references(value)
                         if not secrets.get(variable)]
    return problems + console_hash_problems(config, secrets)


def console_hash_problems(config: GatewayConfig, secrets: SecretSource) -> list[Problem]:
    """Each console operator whose password hash is not set, or is not an argon2 hash: `serve` would not start."""
    if not config.console.enabled:
        return []
    problems: list[Problem] = []
    for i, operator in enumerate(config.console.operators):
        variable = reference_name(operator.password_hash)
        value = secrets.get(variable) if variable else None
        if not value:
            problems.append(Problem(loc=("console", "operators", i, "password_hash"),
                                    message=f"{variable} is not set in the environment or the secrets file"))
        elif not value.startswith("$argon2"):
            problems.append(Problem(loc=("console", "operators", i, "password_hash"),
                                    message=f"{variable} is not an argon2 hash; set it to what `gateway console hash` "
                                            "prints"))
    return problems


def unlisted_mem0_hosts(config: GatewayConfig, access: Mem0Access | None) -> list[Problem]:
    """Each self-hosted mem0 `base_url` this machine's `MEM0_ALLOWED_HOSTS` does not allow: its tools would refuse."""
    if access is None:
        return []
    problems = []
    for i, j, settings in entries_of(config, "memory_mem0", Mem0Config):
        if settings.base_url is None:
            continue
        try:
            endpoint(settings.base_url, access)
        except Mem0Refused as exc:
            problems.append(Problem(loc=("agents", i, "capabilities", j, "config", "base_url"), message=str(exc)))
    return problems


def silent_settings(config: GatewayConfig, models: ModelSetup) -> list[Problem]:
    """Settings that are valid but will do nothing as the config stands."""
    problems = []
    for i, agent in enumerate(config.agents):
        problems += _thinking_without_reasoning(config, agent, i, models)
        problems += _bound_without_resources(agent, i)
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
                                models: ModelSetup) -> list[Problem]:
    entry = next(((j, e) for j, e in enumerate(agent.capabilities) if e.id == THINKING and e.enabled), None)
    if entry is None or models.problem(agent.model) is not None:
        return []
    ignores = models.ignores_thinking(agent.model)
    if ignores is None:
        ignores = _profile_ignores_thinking(models.model_id(agent.model))
    if not ignores:
        return []
    profile_spec = config.models.get(agent.model)
    model = agent.model if profile_spec is None else f"{agent.model} ({getattr(profile_spec, 'model', profile_spec)})"
    return [Problem(loc=("agents", index, "capabilities", entry[0]),
                    message=f"'thinking' does nothing on {model}: pydantic-ai does not know that model as "
                            "one that reasons, so no thinking setting is sent; remove it, or use a reasoning model")]


def _profile_ignores_thinking(model: str) -> bool:
    """pydantic-ai's profile of a model its tables do not list, inferred from the name as a run would; False when
    it cannot say (its provider's package is missing)."""
    from pydantic_ai.models import infer_model_profile  # only for `thinking` on an unlisted model: see the layers test

    try:
        profile = infer_model_profile(model)
    except Exception:  # a provider whose package is missing: reported as a problem of its own
        return False
    return not (profile.get("supports_thinking") or profile.get("thinking_always_enabled"))


def _bound_without_resources(agent: AgentSpec, index: int) -> list[Problem]:
    """`knowledge`, `context` or `skills` bound with nothing named for it: it is not attached at all."""
    return [Problem(loc=("agents", index, "capabilities", j),
                    message=f"{entry.id!r} is not attached: the agent names no {section}; list the ones it uses "
                            f"in agents[].{section}, or remove the capability")
            for j, entry in enumerate(agent.capabilities) if entry.enabled
            for section, capability in USED_BY.items() if entry.id == capability and not getattr(agent, section)]


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
