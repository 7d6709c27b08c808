"""`gateway doctor`: every bot signs in and every model's server answers, one line per check.

Each bot's adapter is opened as `serve` opens it (its platform's identity call: getMe, auth.test,
users/me), but without a transport, a webhook registration or a database. Each model's server gets one
plain GET of its base URL: any HTTP answer means it is reachable, and no tokens are spent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from adapters.base import PlatformConfigError
from adapters.mattermost.adapter import MattermostAdapter
from adapters.platforms import PlatformAdapter
from adapters.protocols import Closable
from adapters.slack.adapter import DEFAULT_API as SLACK_API
from adapters.slack.adapter import SlackAdapter
from adapters.telegram.adapter import DEFAULT_API as TELEGRAM_API
from adapters.telegram.adapter import TelegramAdapter
from adapters.unreachable import describe_unreachable
from gateway.agents.models import ModelResolver
from gateway.config.schema import (
    BotSpec,
    ConfigError,
    GatewayConfig,
    MattermostBotSpec,
    SlackBotSpec,
    TelegramBotSpec,
    resolve_secret,
)
from gateway.config.secrets import SecretSource

MODEL_TIMEOUT = 10.0
MODEL_HINT = "is the model server running, and is its base_url right?"


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    ok: bool
    subject: str
    """What was checked: `bot team-telegram`, `model hosted`."""
    text: str

    def render(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'}  {self.subject}: {self.text}"


async def run_doctor(config: GatewayConfig, secrets: SecretSource, echo: Callable[[str], None]) -> bool:
    """Print one line per check; True when every check passed."""
    models = ModelResolver(config.models, secrets)
    names = list(dict.fromkeys(agent.model for agent in config.agents))
    checks = await asyncio.gather(*(check_bot(index, bot, secrets) for index, bot in enumerate(config.bots)),
                                  *(check_model(name, models) for name in names))
    for check in checks:
        echo(check.render())
    return all(check.ok for check in checks)


async def check_bot(index: int, bot: BotSpec, secrets: SecretSource) -> Check:
    subject = f"bot {bot.name} ({bot.platform})"
    try:
        adapter = build_checked_adapter(index, bot, secrets)
    except ConfigError as exc:
        return Check(ok=False, subject=subject, text=str(exc))
    try:
        identity = await adapter.open()
    except PlatformConfigError as exc:
        return Check(ok=False, subject=subject, text=str(exc))
    except Exception as exc:  # the doctor reports any failure to connect instead of raising it
        return Check(ok=False, subject=subject, text=describe_unreachable(api_url(bot), exc))
    finally:
        if isinstance(adapter, Closable):
            await adapter.close()
    handle = f"@{identity.handle}" if identity.handle else identity.display_name
    return Check(ok=True, subject=subject, text=f"signed in as {handle} (user id {identity.user_id})")


async def check_model(name: str, models: ModelResolver) -> Check:
    subject = f"model {name}"
    problem = models.problem(name)
    if problem is not None:  # an unknown provider, an unset key: in the words `gateway check` uses
        return Check(ok=False, subject=subject, text=problem.message)
    try:
        model = models.resolve(name)
    except Exception as exc:  # what only building the model finds: the library's own words name the fix
        return Check(ok=False, subject=subject, text=f"{type(exc).__name__}: {exc}")
    if model.base_url is None:
        return Check(ok=True, subject=subject, text=f"{model.system} runs in this process; nothing to reach")
    try:
        async with httpx.AsyncClient(timeout=MODEL_TIMEOUT) as client:
            answer = await client.get(model.base_url)
    except httpx.HTTPError as exc:
        return Check(ok=False, subject=subject, text=describe_unreachable(model.base_url, exc, hint=MODEL_HINT))
    return Check(ok=True, subject=subject,
                 text=f"{model.model_name} at {model.base_url} is reachable (HTTP {answer.status_code})")


def build_checked_adapter(index: int, bot: BotSpec, secrets: SecretSource) -> PlatformAdapter:
    """The bot's adapter with its credentials, for signing in only: no webhook, no transport."""
    token = resolve_secret(bot.token, secrets, field=f"bots[{index}].token").get_secret_value()
    match bot:
        case TelegramBotSpec():
            return TelegramAdapter(bot_id=bot.name, token=token, api_base_url=bot.api_base_url)
        case SlackBotSpec():
            return SlackAdapter(bot_id=bot.name, token=token, transport=bot.transport,
                                api_base_url=bot.api_base_url)
        case MattermostBotSpec():
            return MattermostAdapter(bot_id=bot.name, token=token, server_url=bot.api_base_url,
                                     transport=bot.transport, team=bot.team)


def api_url(bot: BotSpec) -> str:
    match bot:
        case TelegramBotSpec():
            return bot.api_base_url or TELEGRAM_API
        case SlackBotSpec():
            return bot.api_base_url or SLACK_API
        case MattermostBotSpec():
            return bot.api_base_url
