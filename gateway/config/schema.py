"""`gateway.yaml` and the process environment, validated with errors that name the field."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from capabilities.memory_mem0.access import Mem0Access, allowed_hosts
from capabilities.registry.config_errors import Problem, describe_errors
from gateway.config.errors import ConfigError
from gateway.config.fields import REFERENCE as _REFERENCE
from gateway.config.fields import SecretReference
from gateway.config.fields import Strict as _Strict
from gateway.config.schedules import HookSpec, ScheduleSpec, destination_problems
from gateway.config.secrets import SecretLookup
from gateway.config.source import ConfigSource, SourceError
from gateway.config.urls import check_server_url

_EMBEDDED_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_USER = re.compile(r"^@?[A-Za-z0-9_][A-Za-z0-9._-]*$")
EXAMPLE = "examples/gateway.yaml"
OPENAI_PROVIDERS = frozenset({"openai", "openai-chat", "openai-responses"})
"""The model-string providers whose key and endpoint also serve OpenAI's transcription API."""


class ModelDeadlines(_Strict):
    """How long a turn waits on its model, in seconds; past any of them the turn ends with a notice."""

    connect: float = Field(default=10.0, gt=0)
    """To connect to the model's server (each attempt)."""
    first_token: float = Field(default=60.0, gt=0)
    """From sending a request until the model's first streamed output."""
    whole: float = Field(default=300.0, gt=0)
    """One model request from start to last token, the provider client's retry included."""

    @model_validator(mode="after")
    def _ordered(self) -> ModelDeadlines:
        if not self.connect <= self.first_token <= self.whole:
            raise ValueError(f"connect {self.connect:g}, first_token {self.first_token:g}, whole {self.whole:g}: "
                             "each contains the one before it, so write connect ≤ first_token ≤ whole")
        return self


class TranscriptionSpec(_Strict):
    """Voice notes and audio files made text by the profile's endpoint (`POST /v1/audio/transcriptions`), with the
    profile's `base_url` and key; the transcript is the person's turn."""

    model: str = Field(min_length=1)
    """The transcription model the endpoint knows (`gpt-4o-mini-transcribe`, `whisper-1`)."""
    max_mb: float = Field(default=20.0, gt=0, le=25)
    """The largest recording transcribed, in MB (OpenAI takes up to 25 MB); a larger one is refused in the chat."""
    max_minutes: float = Field(default=10.0, gt=0)
    """The longest recording transcribed, where the platform says how long it is; a longer one is refused."""


class OpenAIChatProfile(_Strict):
    """An OpenAI-compatible chat-completions endpoint (vLLM, Ollama, LiteLLM, OpenAI itself)."""

    provider: Literal["openai-chat"]
    """An OpenAI-compatible chat-completions endpoint."""
    base_url: str
    """The endpoint's `/v1` URL (`http://127.0.0.1:11434/v1` for Ollama)."""
    model: str
    """The model id the endpoint knows."""
    api_key: SecretReference | None = None
    """A `${ENV_VAR}` reference, as every credential is; local servers often need none, so leave it out."""
    deadlines: ModelDeadlines | None = None
    """This profile's deadlines; unset: the top-level `model_deadlines`."""
    transcription: TranscriptionSpec | None = None
    """Voice notes to text at this endpoint; unset: a voice note is answered with a notice that they are off."""

    @field_validator("base_url")
    @classmethod
    def _server_url(cls, value: str) -> str:
        return check_server_url(value, example="http://127.0.0.1:11434/v1")


class ModelStringProfile(_Strict):
    """A pydantic-ai model string written as a mapping, for the settings a bare string cannot carry."""

    model: str
    """The model string (`openai:gpt-4o`, `anthropic:claude-sonnet-4-5`)."""
    unlisted: bool = False
    """`true` for a model pydantic-ai does not list among its known models (a fine-tune, a private or newer model):
    `gateway check` then takes the id as written instead of refusing it as a likely typo."""
    transcription: TranscriptionSpec | None = None
    """Voice notes to text through OpenAI (`OPENAI_API_KEY`, and `OPENAI_BASE_URL` when set); only for an `openai`
    model string."""

    @model_validator(mode="after")
    def _transcribed_by_openai(self) -> ModelStringProfile:
        if self.transcription is not None and self.model.partition(":")[0] not in OPENAI_PROVIDERS:
            raise ValueError(f"transcription: {self.model!r} is not an OpenAI model string; transcription needs an "
                             "OpenAI-compatible endpoint: use an openai: model, or a profile with provider: "
                             "openai-chat and its base_url")
        return self


def _profile_kind(value: Any) -> str:
    """A mapping with `provider` is an endpoint profile, any other a model string with settings: each mistake is
    then told in the words of the one form it was meant as. The tags are the class names errors are walked by."""
    if isinstance(value, dict):
        return "OpenAIChatProfile" if "provider" in value else "ModelStringProfile"
    return type(value).__name__ if isinstance(value, OpenAIChatProfile | ModelStringProfile) else "str"


ModelProfile = Annotated[Annotated[str, Tag("str")] | Annotated[OpenAIChatProfile, Tag("OpenAIChatProfile")]
                         | Annotated[ModelStringProfile, Tag("ModelStringProfile")], Discriminator(_profile_kind)]


class CapabilityEntry(_Strict):
    id: str = Field(min_length=1)
    """The capability's id, as `gateway capabilities` lists it (`planning`, `web_fetch`)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The capability's settings, checked against its own JSON Schema (`/api/v1/capabilities`)."""
    approval: Literal["default", "required", "never"] = "default"
    """`required` asks a person before every tool call of this capability, `never` never asks; `default` keeps the
    capability's own rule."""
    tool_approval: dict[str, Literal["default", "required", "never"]] = Field(default_factory=dict)
    """Per stable tool id, overriding `approval`."""
    tool_overrides: dict[str, dict[str, str]] = Field(default_factory=dict)
    """The `name` and `description` the model sees, per stable tool id: the gate stays on the id."""
    secret_id: str | None = None
    """The variable holding the capability's key (`NAME` or `${NAME}`), from the environment or the secrets file."""
    enabled: bool = True
    """`false` keeps the entry but gives the agent none of its tools."""


ApprovalMode = Literal["default", "required", "never"]
MCP_NAME = r"^[a-z][a-z0-9_]{0,23}$"
"""An MCP server's name: also the prefix of each of its tools (`github` → `github_create_issue`)."""
_SENSITIVE_HEADER = re.compile(r"authorization|cookie|token|key|secret|password", re.IGNORECASE)


def _templated(value: str) -> str:
    """A header or environment value with `${ENV_VAR}` references inside (`Bearer ${GITHUB_MCP_TOKEN}`)."""
    if "$" in _EMBEDDED_REFERENCE.sub("", value):
        raise ValueError("a $ outside a ${ENV_VAR} reference; write references as ${NAME}")
    return value


SecretTemplate = Annotated[str, AfterValidator(_templated)]


class McpServerSpec(_Strict):
    """An MCP server the operator connects (`mcp_servers[]`); agents bind it by name. Its tools arrive as
    `<name>_<tool>`, and that prefixed name is the stable id approvals and renames key on."""

    name: str = Field(pattern=MCP_NAME)
    """Lower-case letters, digits and `_`, up to 24: the prefix of every tool this server offers."""
    url: str | None = None
    """A streamable-HTTP endpoint (`https://mcp.example.org/mcp`)."""
    headers: dict[str, SecretTemplate] = Field(default_factory=dict)
    """HTTP headers; credentials inside them only as `${ENV_VAR}` references (`Bearer ${GITHUB_MCP_TOKEN}`)."""
    command: str | None = None
    """A program started per run that speaks MCP on stdio: code execution by configuration, operator only."""
    args: list[str] = Field(default_factory=list)
    """The stdio program's arguments."""
    env: dict[str, SecretTemplate] = Field(default_factory=dict)
    """The stdio program's environment (nothing else of the gateway's is passed); values may be references."""
    allowed_tools: list[str] | None = None
    """The server's own tool names (unprefixed) offered to agents; unset: every tool it lists."""
    approval: ApprovalMode = "default"
    """`default` asks before every tool the server does not mark read-only (`readOnlyHint`)."""
    tool_approval: dict[str, ApprovalMode] = Field(default_factory=dict)
    """Per prefixed tool id (`github_create_issue`), overriding `approval`."""
    timeout: float = Field(default=10.0, gt=0, le=120)
    """Seconds to connect and list the tools before the server is skipped for that turn."""

    @field_validator("url")
    @classmethod
    def _server_url(cls, value: str | None) -> str | None:
        return None if value is None else check_server_url(value, example="https://mcp.example.org/mcp")

    @field_validator("headers")
    @classmethod
    def _credentials_referenced(cls, value: dict[str, str]) -> dict[str, str]:
        for header, text in value.items():
            # A credential header is a reference with at most a scheme word before it (`Bearer ${TOKEN}`).
            literal = _EMBEDDED_REFERENCE.sub("", text).split()
            if _SENSITIVE_HEADER.search(header) and (not _EMBEDDED_REFERENCE.search(text) or len(literal) > 1):
                raise ValueError(f"{header}: write the credential as a ${{ENV_VAR}} reference "
                                 "(e.g. 'Bearer ${GITHUB_MCP_TOKEN}'), never the secret itself")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.url is None) == (self.command is None):
            raise ValueError("give either url (streamable HTTP) or command (stdio), exactly one")
        if self.command is None and (self.args or self.env):
            raise ValueError("args and env belong to a stdio command; this server has a url")
        if self.url is None and self.headers:
            raise ValueError("headers belong to an HTTP url; a stdio command takes env")
        return self

    def prefixed(self, tool: str) -> str:
        return f"{self.name}_{tool}"


class McpBinding(_Strict):
    """An agent's use of one MCP server (`agents[].mcp_servers[]`): a bare name, or with its overrides."""

    server: str
    """The name of a server in the top-level `mcp_servers`."""
    approval: ApprovalMode = "default"
    """This agent's mode for every tool of the server; `default` keeps the server's."""
    tool_approval: dict[str, ApprovalMode] = Field(default_factory=dict)
    """Per prefixed tool id, overriding the server's and `approval`."""
    tool_overrides: dict[str, dict[str, str]] = Field(default_factory=dict)
    """The `name` and `description` the model sees, per prefixed tool id: the gate stays on the id."""
    enabled: bool = True
    """`false` keeps the binding but gives the agent none of the server's tools."""


class AgentSpec(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    """The agent's name, as bots and delegating agents name it: letters, digits, `_.-`."""
    model: str
    """A model profile name or a pydantic-ai model string such as `openai-chat:gpt-4o`."""
    instructions: str = ""
    """Sent as instructions on every model request, never frozen into the history."""
    description: str = ""
    """One sentence on what this agent does: how an agent that delegates to it lists it."""
    capabilities: list[CapabilityEntry] = Field(default_factory=list)
    """Capability ids, or entries with their settings and approval rules."""
    subagents: list[str] = Field(default_factory=list)
    """Other agents of this config this one may delegate to, by name (the `subagents` capability)."""
    collections: list[str] = Field(default_factory=list)
    """The top-level `collections` this agent searches, by name (the `knowledge` capability)."""
    context_files: list[str] = Field(default_factory=list)
    """The top-level `context_files` this agent is given, by name (the `context` capability)."""
    skill_folders: list[str] = Field(default_factory=list)
    """The top-level `skill_folders` whose skills this agent may load, by name (the `skills` capability)."""
    mcp_servers: list[McpBinding] = Field(default_factory=list)
    """MCP servers of this config whose tools the agent gets, by name (`[github]` or `[{server: github, ...}]`)."""

    @field_validator("capabilities", mode="before")
    @classmethod
    def _bare_ids(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"id": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _bare_servers(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"server": item} if isinstance(item, str) else item for item in value]
        return value


def _numeric_id(value: Any) -> Any:
    """`12345678` unquoted in YAML is a number; as a user id it is the same as `"12345678"`."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    if not isinstance(value, str):
        raise ValueError(f"must be a user id (12345678, U0123ABCD) or an @handle (@alice), not {value!r}")
    return value


def _user_reference(value: str) -> str:
    if not _USER.match(value):
        raise ValueError(f"{value!r} is neither a user id (12345678, U0123ABCD) nor an @handle (@alice)")
    return value


UserReference = Annotated[str, BeforeValidator(_numeric_id), AfterValidator(_user_reference)]
"""A platform user id or an `@handle`, as allowlists and approver lists name people."""


class RateLimit(_Strict):
    messages: int = Field(gt=0)
    """Messages one speaker may send in `per_seconds` before being asked to slow down."""
    per_seconds: int = Field(gt=0)
    """The window, in seconds."""


def _within_month(day: float | None, month: float | None, what: str) -> None:
    if day is not None and month is not None and day > month:
        raise ValueError(f"{what}_per_day ({day:g}) is above {what}_per_month ({month:g}): the day's limit could never "
                         "be reached; lower it or raise the month's")


class PersonLimits(_Strict):
    """What one person may spend in this bot's chats (their linked identities count as one person)."""

    tokens_per_day: int | None = Field(default=None, gt=0)
    """Input and output tokens per UTC day."""
    tokens_per_month: int | None = Field(default=None, gt=0)
    """Input and output tokens per UTC calendar month."""
    cost_per_day_usd: float | None = Field(default=None, gt=0)
    """US dollars per UTC day, as genai-prices prices the runs (a run it cannot price counts nothing)."""
    cost_per_month_usd: float | None = Field(default=None, gt=0)
    """US dollars per UTC calendar month."""

    @model_validator(mode="after")
    def _day_within_month(self) -> PersonLimits:
        _within_month(self.tokens_per_day, self.tokens_per_month, "tokens")
        _within_month(self.cost_per_day_usd, self.cost_per_month_usd, "cost")
        return self


class BindingLimits(_Strict):
    """What everyone together may spend in this bot's chats."""

    tokens_per_month: int | None = Field(default=None, gt=0)
    """Input and output tokens per UTC calendar month."""
    cost_per_month_usd: float | None = Field(default=None, gt=0)
    """US dollars per UTC calendar month."""


class Limits(_Strict):
    """Budgets: a turn that would start at or past one is refused, with which limit and when it resets."""

    per_person: PersonLimits = PersonLimits()
    """Each person's own budget in this bot's chats."""
    per_binding: BindingLimits = BindingLimits()
    """The budget of everyone in this bot's chats together."""

    @model_validator(mode="after")
    def _some_limit(self) -> Limits:
        if not self.per_person.model_dump(exclude_none=True) and not self.per_binding.model_dump(exclude_none=True):
            raise ValueError("sets no limit; set per_person or per_binding (e.g. per_person: {tokens_per_day: "
                             "200000}), or remove limits")
        return self


class ApprovalPolicy(_Strict):
    """Who may decide a gated tool call posted in this bot's chats, and for how long."""

    who: Literal["requester", "approvers", "room"] = "requester"
    """Who may decide: the person who asked (`requester`), the `approvers` listed, or anyone in the chat (`room`)."""
    approvers: list[UserReference] = Field(default_factory=list)
    """Platform user ids or `@handles`, when `who` is `approvers`."""
    required_approvals: int = Field(default=1, ge=1, le=5)
    """Distinct approvers needed before a call runs (2 = a two-person rule); one deny decides."""
    expires_after: timedelta = Field(default=timedelta(hours=24), gt=timedelta(0), le=timedelta(days=30))
    """Seconds or an ISO 8601 duration (`PT4H`); an undecided call is then denied as expired."""
    tool_approval: dict[str, Literal["default", "required", "never"]] = Field(default_factory=dict)
    """Per stable tool id, overriding the agent spec for this bot."""
    console: bool = False
    """Console operators with the `approver` role may also decide this bot's calls from the browser (one-approver
    cards only: a two-person rule is decided in the chat)."""

    @model_validator(mode="after")
    def _approvers_named(self) -> ApprovalPolicy:
        if self.who == "approvers" and not self.approvers:
            raise ValueError("who is 'approvers' but 'approvers' lists nobody")
        if self.who == "requester" and self.required_approvals > 1:
            raise ValueError("required_approvals > 1 needs who: approvers or room (the requester is one person)")
        return self


WhileBusy = Literal["queue", "steer", "interrupt"]
ApprovalOption = Literal["once", "conversation", "deny"]
"""What an approval card may offer: Approve (`once`), Approve for this conversation, Deny (with a reason or not)."""
APPROVAL_OPTIONS_DEFAULT: tuple[ApprovalOption, ...] = ("once", "deny")


class SuggestedPrompt(_Strict):
    """A prompt a new Slack assistant thread offers to send with one click."""

    title: str = Field(min_length=1, max_length=75)
    """What the button says."""
    message: str = Field(min_length=1, max_length=4000)
    """What is sent when it is clicked."""


class BindingSpec(_Strict):
    instructions: str = ""
    """Extra instructions for this bot, added after the agent's; may use the channel placeholders."""
    access: Literal["open", "allowlist"] = "open"
    """`open` answers everybody who can write to the bot; `allowlist` only the people in `allow`."""
    allow: list[UserReference] = Field(default_factory=list)
    """Platform user ids or `@handles` admitted when `access` is `allowlist`."""
    rate_limit: RateLimit | None = RateLimit(messages=20, per_seconds=60)
    """Per speaker; `null` turns it off."""
    history_turns: int = Field(default=50, ge=0, le=500)
    """How many of the newest turns of the conversation the agent sees."""
    approvals: ApprovalPolicy = ApprovalPolicy()
    """Who decides gated tool calls in this bot's chats, how many, and for how long."""
    approval_options: list[ApprovalOption] = Field(default_factory=lambda: list(APPROVAL_OPTIONS_DEFAULT))
    """What a card offers: `once` (Approve), `conversation` (Approve for this conversation: the same tool with the
    same arguments then runs without a card in this conversation until `approvals.expires_after` has passed),
    `deny` (Deny, and Deny with a reason the model reads). Never `conversation` under a two-person rule."""
    allow_personal_memory: bool = True
    """`false` removes personal memory from this bot's one-to-one chats; group chats keep their notes."""
    allow_bots: bool = False
    """Answer other bots (Slack) when they mention this bot; never by following a thread, so bots cannot loop."""
    channel_tools: dict[str, Any] | None = None
    """The channel lookups granted in this bot's chats (`{tools: [...], default_limit: 20}`), validated
    against the `channel_tools` capability and what the platform can answer when applied."""
    sandbox_scope: Literal["run", "conversation", "channel", "user", "agent"] | None = None
    """Overrides the agent's `sandbox` `session_scope` in this bot's chats; null keeps the spec's."""
    limits: Limits | None = None
    """Token and cost budgets per person (day, month) and for the whole binding (month), in UTC; null: none."""
    while_busy: WhileBusy | None = None
    """A message sent while a turn runs in its conversation: `queue` waits for its own turn, `steer` is handed to
    the running turn at its next model request (one reply answers both), `interrupt` stops the running turn and a
    new one answers both. Unset: `steer` in direct messages, `queue` in groups."""


    title: str | None = Field(default=None, min_length=1, max_length=255)
    """Slack: the title a new assistant thread gets (`assistant.threads.setTitle`)."""
    suggested_prompts: list[SuggestedPrompt] = Field(default_factory=list[SuggestedPrompt], max_length=4)
    """Slack: up to four prompts a new assistant thread offers (`assistant.threads.setSuggestedPrompts`)."""
    feedback: bool = False
    """👍 / 👎 under every answer (Slack's feedback block; buttons on Telegram and Mattermost), each click recorded
    with the run (one per person: a second click replaces the first) and counted in `/metrics`."""
    reaction: bool = False
    """Telegram and Slack: 👀 on the person's message as the first sign where typing or a status line does not show
    (a group or channel, or a message waiting for its turn), taken away when it is answered. Slack needs the
    `reactions:write` scope, which `gateway slack manifest` asks."""

    @model_validator(mode="after")
    def _allowlist_named(self) -> BindingSpec:
        if self.access == "allowlist" and not self.allow:
            raise ValueError("access is 'allowlist' but 'allow' lists nobody; add user ids or @handles")
        return self

    @model_validator(mode="after")
    def _card_offers(self) -> BindingSpec:
        options = self.approval_options
        if len(set(options)) != len(options):
            raise ValueError(f"approval_options lists an option twice: {options}")
        if "deny" not in options or not {"once", "conversation"} & set(options):
            raise ValueError("approval_options must offer deny and at least one of once, conversation "
                             "(a person asked can always refuse, and can approve somehow)")
        if "conversation" in options and self.approvals.required_approvals > 1:
            raise ValueError("approval_options: 'conversation' is never offered under a two-person rule "
                             f"(approvals.required_approvals: {self.approvals.required_approvals}); remove it, so "
                             "every such call is approved by each approver, every time")
        return self


class _BotSpecBase(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_-]+$")
    """The bot's name in URLs (`/telegram/{name}/webhook`) and logs: letters, digits, `_-`."""
    token: SecretReference
    """A `${ENV_VAR}` reference to the bot's token."""
    api_base_url: str | None = None
    """The platform's API address, for self-hosted or compatible servers (and the tests' fakes)."""
    agent: str
    """The agent that answers for this bot, by name."""
    binding: BindingSpec = BindingSpec()
    """How the agent serves this bot's chats: access, rate limit, history, approvals."""


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
    """The chat platform."""
    transport: Literal["polling", "webhook"] = "polling"
    """`polling` (getUpdates, nothing exposed) or `webhook` (needs `server.public_url`, HTTPS)."""

    @property
    def needs_public_url(self) -> bool:
        return self.transport == "webhook"


class SlackBotSpec(_BotSpecBase):
    platform: Literal["slack"]
    """The chat platform."""
    transport: Literal["socket", "http"] = "socket"
    """`socket` (Socket Mode, nothing exposed; needs `app_token`) or `http` (Events API; needs `signing_secret`
    and `server.public_url`)."""
    app_token: SecretReference | None = None
    """`${ENV_VAR}` reference to the app-level `xapp-` token (Socket Mode)."""
    signing_secret: SecretReference | None = None
    """`${ENV_VAR}` reference to the signing secret (Events API over HTTP)."""


    @field_validator("api_base_url")
    @classmethod
    def _without_api_path(cls, value: str | None) -> str | None:
        """slack-sdk spells its base URL with `/api/`; the adapter adds that itself, so both forms work."""
        return re.sub(r"/api/?$", "", value.rstrip("/")) if value else value

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
    """The chat platform."""
    api_base_url: str  # pyright: ignore[reportIncompatibleVariableOverride,reportGeneralTypeIssues] - required here
    """The Mattermost server's URL; required, since no default server exists."""
    transport: Literal["websocket", "webhook"] = "websocket"
    """`websocket` (the bot's event stream) or `webhook` (an outgoing webhook; needs `webhook_token`)."""
    webhook_token: SecretReference | None = None
    """`${ENV_VAR}` reference to the outgoing webhook's token, pasted from Mattermost."""
    team: str | None = None
    """The team the bot serves (name or id); checked when the bot connects."""


    @field_validator("api_base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:  # pyright: ignore[reportIncompatibleMethodOverride] - never None here
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


class ServerSpec(_Strict):
    host: str = "127.0.0.1"
    """The address the HTTP server listens on (`0.0.0.0` in a container)."""
    port: int = Field(default=8080, ge=0, le=65535)
    """The port it listens on; 0 picks a free one."""
    public_url: str | None = None
    """Where the platforms reach this server; webhook transports need it."""


ConsoleRole = Literal["operator", "transcripts", "approver"]
"""`operator` sees every page; `transcripts` sees who spoke unhashed; `approver` decides approvals from the console."""


class ConsoleOperator(_Strict):
    """One person who may sign in to the console."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.@-]{1,64}$")
    """What they sign in with, and how the audit names them."""
    password_hash: SecretReference
    """An argon2 hash (`gateway console hash` makes one), as a `${ENV_VAR}` reference: never the hash itself."""
    roles: list[ConsoleRole] = Field(default_factory=lambda: ["operator"])
    """`operator` (every page; always held), `transcripts` (people named, turns shown), `approver` (decides
    approvals where a binding lets the console decide)."""


class ConsoleSpec(_Strict):
    """The operator console in the browser (`/console`); off unless enabled."""

    enabled: bool = False
    """Serve the console; off by default."""
    path: str = Field(default="/console", pattern=r"^(/[A-Za-z0-9_-]+)+$")
    """Where the console is served: a path of its own, such as `/console` or `/ops/console`."""
    operators: list[ConsoleOperator] = Field(default_factory=list[ConsoleOperator])
    """Who may sign in; an enabled console needs at least one."""
    allow_changes: bool = False
    """False: the builder shows the gateway.yaml fragment only; true: it may apply it as a new agent version."""
    session_hours: float = Field(default=12.0, gt=0, le=24 * 30)
    """How long a sign-in lasts."""

    @model_validator(mode="after")
    def _someone_signs_in(self) -> ConsoleSpec:
        if self.enabled and not self.operators:
            raise ValueError("console.operators lists nobody, so nobody could sign in; add an operator with a "
                             "password_hash (`gateway console hash` makes one), or set enabled: false")
        names = [operator.name for operator in self.operators]
        if len(set(names)) != len(names):
            raise ValueError("console.operators names someone twice; give each operator a name of their own")
        return self


_RESOURCE_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class CollectionSpec(_Strict):
    """A collection of documents for `knowledge` search; `gateway knowledge add NAME PATH…` fills it."""

    name: str = Field(pattern=_RESOURCE_NAME)
    """The collection's name, as agents' `collections` name it."""
    description: str = ""
    """What the collection holds: how the model is told what it may search."""


class ContextFileSpec(_Strict):
    """A standing context file: placed in the instructions (`inject`) or read on demand (`link`)."""

    name: str = Field(pattern=_RESOURCE_NAME)
    """The file's name, as agents' `context_files` name it."""
    description: str = Field(min_length=1)
    """One line on what the file holds: what `list_context` shows the model."""
    mode: Literal["inject", "link"] = "link"
    """`inject` places it in the instructions (at most 20,000 characters); `link` lets the model read it when
    needed (at most 200,000)."""
    format: str = Field(default="markdown", pattern=r"^[A-Za-z0-9_.+-]{1,32}$")
    """How the model is told to read it (`markdown`, `yaml`, `csv`)."""
    path: str | None = None
    """A UTF-8 text file, by its absolute path; or give `text`."""
    text: str | None = None
    """The content inline; or give `path`."""

    @model_validator(mode="after")
    def _one_source(self) -> ContextFileSpec:
        if (self.path is None) == (self.text is None):
            raise ValueError("give exactly one of path (a file) or text (the content inline)")
        return self


class SkillFolderSpec(_Strict):
    """A folder of skills, each a subfolder with a `SKILL.md` (YAML front matter: name, description)."""

    name: str = Field(pattern=_RESOURCE_NAME)
    """The folder's name, as agents' `skill_folders` name it."""
    path: str
    """The folder's absolute path."""
class BubblewrapSandboxSpec(_Strict):
    """A shell on this host: each workspace a directory under `directory`, each command inside bubblewrap."""

    kind: Literal["bubblewrap"]
    """A shell on this host, each command inside bubblewrap."""
    directory: Path
    """Where the workspaces' directories live; no default. Keep it apart from the database, this config and the
    secrets file: `gateway check` refuses it nested with the directory of any of them."""
    network: bool = False
    """Let commands use this host's network, loopback (the gateway's own services) included; off by default."""
    default: bool = False
    """What `connection_id: null` means; a single connection is the default anyway."""


class SandboxdSpec(_Strict):
    """A `sandboxd` service (pydantic-ai-backend's) that owns the containers."""

    kind: Literal["sandboxd"]
    """A sandboxd service that owns the containers."""
    url: str
    """The service's http(s) URL."""
    token: SecretReference
    """A `${ENV_VAR}` reference to the service's token."""
    runtimes: list[str] = Field(default_factory=list)
    """The runtime aliases agents may name; empty: only the service's default."""
    default: bool = False
    """What `connection_id: null` means; a single connection is the default anyway."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return check_server_url(value)


SandboxSpec = Annotated[BubblewrapSandboxSpec | SandboxdSpec, Field(discriminator="kind")]


class GatewayConfig(_Strict):
    models: dict[str, ModelProfile] = Field(default_factory=dict)
    """Model profiles by name: a pydantic-ai model string (`openai:gpt-4o`) or an OpenAI-compatible endpoint."""
    agents: list[AgentSpec]
    """The agents: each a model, instructions and capabilities; bots name one."""
    bots: list[BotSpec]
    """The bots on Telegram, Slack or Mattermost, each bound to an agent."""
    server: ServerSpec = ServerSpec()
    """The HTTP server: webhooks, `/healthz`, `/readyz`, `/metrics`."""
    console: ConsoleSpec = ConsoleSpec()
    """The operator console in the browser; off unless `enabled`."""
    collections: list[CollectionSpec] = Field(default_factory=list)
    """Document collections for the `knowledge` capability."""
    context_files: list[ContextFileSpec] = Field(default_factory=list)
    """Standing context files for the `context` capability."""
    skill_folders: list[SkillFolderSpec] = Field(default_factory=list)
    """Folders of skills for the `skills` capability."""
    mcp_servers: list[McpServerSpec] = Field(default_factory=list)
    """MCP servers the operator connects; agents bind them by name (`agents[].mcp_servers`)."""
    sandboxes: dict[str, SandboxSpec] = Field(default_factory=dict)
    """Sandbox connections for `sandbox` workspaces with `backend: service`, by name (the spec's `connection_id`)."""
    model_deadlines: ModelDeadlines = Field(default_factory=ModelDeadlines)
    """The deadlines of every model without its own (model strings, profiles without `deadlines`)."""
    schedules: list[ScheduleSpec] = Field(default_factory=list)
    """Runs the operator schedules: a cron expression, a bot and the chat it posts in."""
    hooks: list[HookSpec] = Field(default_factory=list)
    """Webhooks from other systems that start a run (`POST /hooks/{name}`), each signed with its own secret."""

    def default_sandbox(self) -> str | None:
        """What `connection_id: null` means: the one marked `default`, or the only one there is."""
        marked = [name for name, spec in self.sandboxes.items() if spec.default]
        if marked:
            return marked[0]
        return next(iter(self.sandboxes)) if len(self.sandboxes) == 1 else None

    @field_validator("agents")
    @classmethod
    def _some_agent(cls, value: list[AgentSpec]) -> list[AgentSpec]:
        if not value:
            raise ValueError(f"lists no agent; define at least one, as {EXAMPLE} does")
        return value

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
    otlp_endpoint: str | None = Field(default=None, alias="OTEL_EXPORTER_OTLP_ENDPOINT")
    """Where traces go over OTLP/HTTP (`/v1/traces` is appended, as OpenTelemetry does); unset: no tracing."""
    trace_content: bool = Field(default=False, alias="GATEWAY_TRACE_CONTENT")
    sandbox_state_max_bytes: int = Field(default=10 * 2**20, gt=0, alias="SANDBOX_STATE_MAX_BYTES")
    """Bytes of file content one `state` workspace of `sandbox` may hold."""
    browser_engine_url: str | None = Field(default=None, alias="GATEWAY_BROWSER_ENGINE")
    """Where the out-of-process browser engine for `browser_use` listens (loopback); unset: no engine."""
    """Put message text and tool arguments into the exported spans; off, spans carry only their shape."""
    dev_web_fetch_allow_local: bool = Field(default=False, alias="GATEWAY_DEV_WEB_FETCH_ALLOW_LOCAL")
    """Tests and development only: `web_fetch` may read private and loopback addresses (never cloud metadata).
    `gateway check` reports it whenever it is set."""
    deployment: str = Field(default="gateway", alias="GATEWAY_DEPLOYMENT", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    """This deployment's name, the first part of every mem0 `user_id`: two deployments sharing a mem0 account
    never see each other's memories."""
    mem0_allowed_hosts: str = Field(default="", alias="MEM0_ALLOWED_HOSTS")
    """Hosts of self-hosted mem0 servers a key may be sent to, comma-separated; empty refuses self-hosted mem0."""
    mem0_ca_bundle: Path | None = Field(default=None, alias="MEM0_CA_BUNDLE")
    """A PEM file of the CAs to trust for a self-hosted mem0 server (an internal CA); unset: the system's."""

    @property
    def mem0_access(self) -> Mem0Access:
        return Mem0Access(deployment=self.deployment, allowed_hosts=allowed_hosts(self.mem0_allowed_hosts),
                          ca_file=self.mem0_ca_bundle)

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str) -> str:
        for plain, driver in (("postgresql://", "postgresql+psycopg://"), ("postgres://", "postgresql+psycopg://"),
                              ("sqlite://", "sqlite+aiosqlite://")):
            if value.startswith(plain):
                return driver + value.removeprefix(plain)
        return value


def load_config(path: Path) -> GatewayConfig:
    """Read and validate a config file; raises `ConfigError` listing every problem, one per line."""
    source = read_source(path)
    config, problems = validate_source(source)
    if problems or config is None:
        raise ConfigError("\n".join(source.lines(problems)))
    return config


def read_source(path: Path) -> ConfigSource:
    """The file's data with the place of each setting; `ConfigError` when it cannot be read or parsed."""
    try:
        return ConfigSource.read(path)
    except SourceError as exc:
        raise ConfigError(str(exc)) from None


def validate_source(source: ConfigSource) -> tuple[GatewayConfig | None, list[Problem]]:
    """The config and every problem of its schema and its cross-references (None when the schema fails)."""
    if source.data is None:
        return None, [Problem(loc=(), message=f"the file is empty; copy {EXAMPLE} and edit it")]
    if not isinstance(source.data, dict):
        return None, [Problem(loc=(), message=f"the file should be a mapping with agents: and bots: at the top "
                                              f"(as in {EXAMPLE}), not a {type(source.data).__name__}")]
    try:
        config = GatewayConfig.model_validate(source.data)
    except ValidationError as exc:
        return None, [*source.repeated, *map(_listing_agents(source.data), describe_errors(exc, GatewayConfig))]
    return config, [*source.repeated, *reference_problems(config)]


def _listing_agents(data: dict[str, Any]) -> Callable[[Problem], Problem]:
    """A bot without `agent` is told which agents there are."""
    agents = given if isinstance(given := data.get("agents"), list) else []
    names = _names(a["name"] for a in agents if isinstance(a, dict) and isinstance(a.get("name"), str))

    def listed(problem: Problem) -> Problem:
        if len(problem.loc) == 3 and problem.loc[0] == "bots" and problem.loc[2] == "agent":
            return Problem(loc=problem.loc, message=f"{problem.message}; name the agent that answers this bot, "
                                                    f"one of {names}")
        return problem
    return listed


def reference_problems(config: GatewayConfig) -> list[Problem]:
    """What each setting refers to exists: agent and bot names, the public URL and tokens a transport needs."""
    problems = _unique("agents", [a.name for a in config.agents]) + _unique("bots", [b.name for b in config.bots])
    for section in RESOURCE_SECTIONS:
        defined = [item.name for item in getattr(config, section)]
        problems += _unique(section, defined)
        for i, agent in enumerate(config.agents):
            for k, name in enumerate(getattr(agent, section)):
                if name not in defined:
                    problems.append(Problem(loc=("agents", i, section, k),
                                            message=f"{name!r} is not defined in the top-level {section} "
                                                    f"({_names(defined)}); define it there, or remove it here"))
    problems += _unique("mcp_servers", [s.name for s in config.mcp_servers]) + _mcp_references(config)
    agents = {a.name for a in config.agents}
    for i, bot in enumerate(config.bots):
        if bot.agent not in agents:
            problems.append(Problem(loc=("bots", i, "agent"),
                                    message=f"{bot.agent!r} is not one of {_names(agents)}"))
        if bot.needs_public_url and not config.server.public_url:
            problems.append(Problem(loc=("bots", i, "transport"),
                                    message=f"{bot.transport!r} needs server.public_url, the address the platform "
                                            "reaches this server at"))
        problems += [Problem(loc=("bots", i, field), message=missing) for field, missing in bot.missing_settings()]
    return problems + destination_problems(config)


RESOURCE_SECTIONS = ("collections", "context_files", "skill_folders")
"""Top-level definitions an agent spec binds by name, under a field of the same name."""


def _mcp_references(config: GatewayConfig) -> list[Problem]:
    """Each agent's `mcp_servers` names a server of this config once, and keys its overrides on that server's
    prefixed tool ids."""
    servers = {s.name: s for s in config.mcp_servers}
    problems = []
    for i, agent in enumerate(config.agents):
        seen: set[str] = set()
        for j, use in enumerate(agent.mcp_servers):
            where = ("agents", i, "mcp_servers", j)
            server = servers.get(use.server)
            if server is None:
                problems.append(Problem(loc=(*where, "server"),
                                        message=f"{use.server!r} is not one of mcp_servers ({_names(servers)})"))
                continue
            if use.server in seen:
                problems.append(Problem(loc=(*where, "server"), message=f"{use.server!r} is bound twice"))
            seen.add(use.server)
            for field in ("tool_approval", "tool_overrides"):
                problems += [Problem(loc=(*where, field, tool_id), message=message)
                             for tool_id in getattr(use, field) if (message := mcp_tool_problem(server, tool_id))]
    for i, server in enumerate(config.mcp_servers):
        problems += [Problem(loc=("mcp_servers", i, "tool_approval", tool_id), message=message)
                     for tool_id in server.tool_approval if (message := mcp_tool_problem(server, tool_id))]
    return problems


def mcp_tool_problem(server: McpServerSpec, tool_id: str) -> str | None:
    """Why `tool_id` cannot be one of `server`'s prefixed tool ids, or None."""
    prefix = f"{server.name}_"
    if not tool_id.startswith(prefix):
        return f"{tool_id!r} is not a tool id of {server.name!r}: its tools are keyed as {prefix}<tool>"
    if server.allowed_tools is not None and tool_id.removeprefix(prefix) not in server.allowed_tools:
        allowed = ", ".join(server.prefixed(t) for t in server.allowed_tools) or "none"
        return f"{tool_id!r} is not in the server's allowed_tools (offered: {allowed})"
    return None




def resolve_secret(reference: str, secrets: SecretLookup, *, field: str) -> SecretStr:
    """Look up a `${ENV_VAR}` reference; raises `ConfigError` naming the field and the variable."""
    name = _REFERENCE.match(reference)
    if name is None:
        raise ConfigError(f"{field}: expected a ${{ENV_VAR}} reference")
    value = secrets.get(name.group(1))
    if not value:
        raise ConfigError(f"{field}: {name.group(1)} is not set in the environment or the secrets file")
    return SecretStr(value)


def secret_name(secret_id: str) -> str:
    """The variable a capability entry's `secret_id` names: `TAVILY_API_KEY`, or `${TAVILY_API_KEY}` as bot
    credentials are written."""
    return reference_name(secret_id) or secret_id


def capability_secrets(config: GatewayConfig) -> list[tuple[tuple[str | int, ...], str]]:
    """Each enabled capability entry that names a secret: (its `secret_id` field's place, the variable)."""
    return [(("agents", i, "capabilities", j, "secret_id"), secret_name(entry.secret_id))
            for i, agent in enumerate(config.agents) for j, entry in enumerate(agent.capabilities)
            if entry.secret_id and entry.enabled]
def resolve_template(template: str, secrets: SecretLookup, *, field: str) -> str:
    """A header or environment value with each `${ENV_VAR}` filled in; `ConfigError` naming the field and the
    variable when one is unset (never the value)."""
    def value(match: re.Match[str]) -> str:
        found = secrets.get(match.group(1))
        if not found:
            raise ConfigError(f"{field}: {match.group(1)} is not set in the environment or the secrets file")
        return found
    return _EMBEDDED_REFERENCE.sub(value, template)


def template_references(template: str) -> list[str]:
    """The variables a header or environment value names."""
    return _EMBEDDED_REFERENCE.findall(template)


def reference_name(reference: str) -> str | None:
    """The variable a `${ENV_VAR}` reference names."""
    matched = _REFERENCE.match(reference)
    return matched.group(1) if matched else None


def _unique(section: str, names: list[str]) -> list[Problem]:
    seen: set[str] = set()
    repeated = [n for n in names if n in seen or seen.add(n)]
    return [Problem(loc=(section, names.index(n, names.index(n) + 1), "name"),
                    message=f"{n!r} is used twice in {section}; give each one a name of its own")
            for n in dict.fromkeys(repeated)]


def _names(names: Any) -> str:
    return ", ".join(sorted(names)) or "none defined"
