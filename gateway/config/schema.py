"""`gateway.yaml` and the process environment, validated with errors that name the field."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from gateway.config.secrets import SecretSource
from gateway.config.urls import check_server_url

_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


class ConfigError(Exception):
    """The configuration cannot be used; the message lists each problem with its field path."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OpenAIChatProfile(_Strict):
    """An OpenAI-compatible chat-completions endpoint (vLLM, Ollama, LiteLLM, OpenAI itself)."""

    provider: Literal["openai-chat"]
    base_url: str
    model: str
    api_key: str | None = None
    """A `${ENV_VAR}` reference; local servers often need none."""


ModelProfile = Annotated[str | OpenAIChatProfile, Field(union_mode="left_to_right")]


class CapabilityEntry(_Strict):
    id: str = Field(min_length=1)
    config: dict[str, Any] = Field(default_factory=dict)
    approval: Literal["default", "required", "never"] = "default"
    tool_approval: dict[str, Literal["default", "required", "never"]] = Field(default_factory=dict)
    tool_overrides: dict[str, dict[str, str]] = Field(default_factory=dict)
    secret_id: str | None = None
    enabled: bool = True


class AgentSpec(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    model: str
    """A model profile name or a pydantic-ai model string such as `openai-chat:gpt-4o`."""
    instructions: str = ""
    description: str = ""
    """One sentence on what this agent does: how an agent that delegates to it lists it."""
    capabilities: list[CapabilityEntry] = Field(default_factory=list)
    subagents: list[str] = Field(default_factory=list)
    """Other agents of this config this one may delegate to, by name (the `subagents` capability)."""

    @field_validator("capabilities", mode="before")
    @classmethod
    def _bare_ids(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"id": item} if isinstance(item, str) else item for item in value]
        return value


class RateLimit(_Strict):
    messages: int = Field(gt=0)
    per_seconds: int = Field(gt=0)


class ApprovalPolicy(_Strict):
    """Who may decide a gated tool call posted in this bot's chats, and for how long."""

    who: Literal["requester", "approvers", "room"] = "requester"
    approvers: list[str] = Field(default_factory=list)
    """Platform user ids or `@handles`, when `who` is `approvers`."""
    required_approvals: int = Field(default=1, ge=1, le=5)
    """Distinct approvers needed before a call runs (2 = a two-person rule); one deny decides."""
    expires_after: timedelta = Field(default=timedelta(hours=24), gt=timedelta(0), le=timedelta(days=30))
    """Seconds or an ISO 8601 duration (`PT4H`); an undecided call is then denied as expired."""
    tool_approval: dict[str, Literal["default", "required", "never"]] = Field(default_factory=dict)
    """Per stable tool id, overriding the agent spec for this bot."""

    @model_validator(mode="after")
    def _approvers_named(self) -> ApprovalPolicy:
        if self.who == "approvers" and not self.approvers:
            raise ValueError("who is 'approvers' but 'approvers' lists nobody")
        if self.who == "requester" and self.required_approvals > 1:
            raise ValueError("required_approvals > 1 needs who: approvers or room (the requester is one person)")
        return self


class BindingSpec(_Strict):
    instructions: str = ""
    access: Literal["open", "allowlist"] = "open"
    allow: list[str] = Field(default_factory=list)
    """Platform user ids or `@handles` admitted when `access` is `allowlist`."""
    rate_limit: RateLimit | None = RateLimit(messages=20, per_seconds=60)
    """Per speaker; `null` turns it off."""
    history_turns: int = Field(default=50, ge=0, le=500)
    approvals: ApprovalPolicy = ApprovalPolicy()
    allow_personal_memory: bool = True
    """`false` removes personal memory from this bot's one-to-one chats; group chats keep their notes."""
    allow_bots: bool = False
    """Answer other bots (Slack) when they mention this bot; never by following a thread, so bots cannot loop."""
    channel_tools: dict[str, Any] | None = None
    """The channel lookups granted in this bot's chats (`{tools: [...], default_limit: 20}`), validated
    against the `channel_tools` capability and what the platform can answer when applied."""

    @model_validator(mode="after")
    def _allowlist_named(self) -> BindingSpec:
        if self.access == "allowlist" and not self.allow:
            raise ValueError("access is 'allowlist' but 'allow' lists nobody; add user ids or @handles")
        return self


class _BotSpecBase(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    token: str
    """A `${ENV_VAR}` reference to the bot's token."""
    api_base_url: str | None = None
    """The platform's API address, for self-hosted or compatible servers (and the tests' fakes)."""
    agent: str
    binding: BindingSpec = BindingSpec()

    @field_validator("token")
    @classmethod
    def _token_by_reference(cls, value: str) -> str:
        _require_reference(value)
        return value

    @field_validator("api_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/@\s]+(/\S*)?$", value):
            raise ValueError("must be an http(s) URL without credentials, e.g. http://127.0.0.1:8081")
        return value.rstrip("/") if value else value

    @property
    def needs_public_url(self) -> bool:
        """True when the platform must be told where to reach this server."""
        return False

    def missing_settings(self) -> list[tuple[str, str]]:
        """Settings the chosen transport needs and this bot lacks, as (field, what to set)."""
        return []


class TelegramBotSpec(_BotSpecBase):
    platform: Literal["telegram"]
    transport: Literal["polling", "webhook"] = "polling"

    @property
    def needs_public_url(self) -> bool:
        return self.transport == "webhook"


class SlackBotSpec(_BotSpecBase):
    platform: Literal["slack"]
    transport: Literal["socket", "http"] = "socket"
    app_token: str | None = None
    """`${ENV_VAR}` reference to the app-level `xapp-` token (Socket Mode)."""
    signing_secret: str | None = None
    """`${ENV_VAR}` reference to the signing secret (Events API over HTTP)."""

    @field_validator("app_token", "signing_secret")
    @classmethod
    def _secrets_by_reference(cls, value: str | None) -> str | None:
        _require_reference(value)
        return value

    @property
    def needs_public_url(self) -> bool:
        return self.transport == "http"

    def missing_settings(self) -> list[tuple[str, str]]:
        if self.transport == "socket" and self.app_token is None:
            return [("app_token", "transport 'socket' needs the app-level token (xapp-…, scope connections:write) "
                                  "as a ${ENV_VAR} reference")]
        if self.transport == "http" and self.signing_secret is None:
            return [("signing_secret", "transport 'http' needs the app's Signing Secret as a ${ENV_VAR} reference")]
        return []


class MattermostBotSpec(_BotSpecBase):
    platform: Literal["mattermost"]
    api_base_url: str
    """The Mattermost server's URL; required, since no default server exists."""
    transport: Literal["websocket", "webhook"] = "websocket"
    webhook_token: str | None = None
    """`${ENV_VAR}` reference to the outgoing webhook's token, pasted from Mattermost."""
    team: str | None = None
    """The team the bot serves (name or id); checked when the bot connects."""

    @field_validator("webhook_token")
    @classmethod
    def _secrets_by_reference(cls, value: str | None) -> str | None:
        _require_reference(value)
        return value

    @field_validator("api_base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        """Replaces the base check: private and loopback servers pass, cloud metadata addresses do not."""
        if value.rstrip("/").endswith("/api/v4"):
            raise ValueError("give the server's URL without /api/v4, e.g. https://chat.example.org")
        return check_server_url(value, example="https://chat.example.org")

    @model_validator(mode="after")
    def _webhook_has_token(self) -> MattermostBotSpec:
        if self.transport == "webhook" and not self.webhook_token:
            raise ValueError("transport is 'webhook' but webhook_token is not set; paste the outgoing "
                             "webhook's token as a ${ENV_VAR} reference")
        return self


BotSpec = Annotated[TelegramBotSpec | SlackBotSpec | MattermostBotSpec, Field(discriminator="platform")]
PLATFORM_TAGS = ("telegram", "slack", "mattermost")


class ServerSpec(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    public_url: str | None = None
    """Where the platforms reach this server; webhook transports need it."""


class GatewayConfig(_Strict):
    models: dict[str, ModelProfile] = Field(default_factory=dict)
    agents: list[AgentSpec]
    bots: list[BotSpec]
    server: ServerSpec = ServerSpec()

    @model_validator(mode="after")
    def _cross_references(self) -> GatewayConfig:
        problems = _unique("agents", [a.name for a in self.agents]) + _unique("bots", [b.name for b in self.bots])
        agents = {a.name for a in self.agents}
        for i, bot in enumerate(self.bots):
            if bot.agent not in agents:
                problems.append(f"bots[{i}].agent: {bot.agent!r} is not one of {_names(agents)}")
            if bot.needs_public_url and not self.server.public_url:
                problems.append(f"bots[{i}].transport: {bot.transport!r} needs server.public_url")
            problems += [f"bots[{i}].{field}: {missing}" for field, missing in bot.missing_settings()]
        for i, agent in enumerate(self.agents):
            if agent.model not in self.models and ":" not in agent.model and agent.model != "test":
                problems.append(
                    f"agents[{i}].model: {agent.model!r} is neither a profile in models "
                    f"({_names(self.models)}) nor a model string like 'openai-chat:gpt-4o'"
                )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def agent(self, name: str) -> AgentSpec:
        return next(a for a in self.agents if a.name == name)


class Settings(BaseSettings):
    """Process settings from the environment."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore")

    database_url: str = "sqlite+aiosqlite:///./gateway.db"
    redis_url: str | None = None
    secrets_file: Path | None = Field(default=None, alias="GATEWAY_SECRETS_FILE")
    granted_scopes: str | None = Field(default=None, alias="GATEWAY_GRANTED_SCOPES")
    """Comma-separated capability scopes this deployment grants; unset grants all of them."""

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str) -> str:
        for plain, driver in (("postgresql://", "postgresql+psycopg://"), ("postgres://", "postgresql+psycopg://"),
                              ("sqlite://", "sqlite+aiosqlite://")):
            if value.startswith(plain):
                return driver + value.removeprefix(plain)
        return value


def load_config(path: Path) -> GatewayConfig:
    """Read and validate a config file; raises `ConfigError` listing every problem."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    try:
        return GatewayConfig.model_validate(data or {})
    except ValidationError as exc:
        raise ConfigError(f"{path}:\n" + format_errors(exc)) from None


def format_errors(exc: ValidationError) -> str:
    return "\n".join(f"  {_path(_located(e))}: {_message(e)}" for e in exc.errors())


def _located(error: Any) -> tuple[int | str, ...]:
    """A wrong or missing `platform` is reported at the field itself."""
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return (*error["loc"], "platform")
    return tuple(error["loc"])


def resolve_secret(reference: str, secrets: SecretSource, *, field: str) -> SecretStr:
    """Look up a `${ENV_VAR}` reference; raises `ConfigError` naming the field and the variable."""
    name = _REFERENCE.match(reference)
    if name is None:
        raise ConfigError(f"{field}: expected a ${{ENV_VAR}} reference")
    value = secrets.get(name.group(1))
    if not value:
        raise ConfigError(f"{field}: {name.group(1)} is not set in the environment or the secrets file")
    return SecretStr(value)


def _require_reference(value: str | None) -> None:
    if value is not None and not _REFERENCE.match(value):
        raise ValueError("write credentials as a ${ENV_VAR} reference, never the secret itself")


def _unique(section: str, names: list[str]) -> list[str]:
    seen: set[str] = set()
    repeated = [n for n in names if n in seen or seen.add(n)]
    return [f"{section}: name {n!r} is used twice" for n in dict.fromkeys(repeated)]


def _names(names: Any) -> str:
    return ", ".join(sorted(names)) or "none defined"


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "OpenAIChatProfile", "CapabilityEntry", *PLATFORM_TAGS) or part.startswith("function-"):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _message(error: Any) -> str:
    if error["type"] == "union_tag_invalid":
        return f"{error['ctx']['tag']!r} is not one of {', '.join(PLATFORM_TAGS)}"
    if error["type"] == "literal_error":
        allowed = error["ctx"]["expected"].replace("'", "").replace(" or ", ", ")
        return f"{error['input']!r} is not one of {allowed}"
    if error["type"] == "extra_forbidden":
        return "unknown setting"
    return str(error["msg"]).removeprefix("Value error, ")
