"""Builds each configured bot's adapter, resolving its credentials server-side."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Literal

from adapters.platforms import PlatformAdapter
from gateway.agents.bindings import BindingStore
from gateway.config.schema import BotSpec, ConfigError, MattermostBotSpec, SlackBotSpec, TelegramBotSpec, resolve_secret
from gateway.config.secrets import SecretSource
from gateway.server.logs import SecretRedactor

if TYPE_CHECKING:
    from adapters.mattermost.adapter import MattermostAdapter
    from adapters.slack.adapter import SlackAdapter
    from adapters.telegram.adapter import TelegramAdapter


@dataclass(frozen=True, slots=True, kw_only=True)
class AdapterContext:
    secrets: SecretSource
    redactor: SecretRedactor
    bindings: BindingStore
    public_url: str | None
    poll_timeout: int
    api_trouble: Callable[[str, str, Literal["rate_limited", "error"]], None]
    """`GatewayMetrics.api_trouble`: (platform, method, kind); each adapter gets it bound to its platform."""

    def secret(self, reference: str, *, field: str) -> str:
        """Resolve a `${ENV_VAR}` reference and keep its value out of every log line."""
        value = resolve_secret(reference, self.secrets, field=field).get_secret_value()
        self.redactor.add(value)
        return value

    def route(self, platform: str, bot_name: str, leaf: str) -> str:
        return f"{(self.public_url or '').rstrip('/')}/{platform}/{bot_name}/{leaf}"


async def build_adapter(index: int, bot: BotSpec, context: AdapterContext) -> PlatformAdapter:
    match bot:
        case TelegramBotSpec():
            return await _telegram(index, bot, context)
        case MattermostBotSpec():
            return await _mattermost(index, bot, context)
        case SlackBotSpec():
            return _slack(index, bot, context)


# Each platform's adapter, and its SDK, loads with the first bot of that platform: a gateway of Telegram bots does
# not carry Slack's aiohttp stack or Mattermost's requests one (together some 20 MB).


async def _telegram(index: int, bot: TelegramBotSpec, context: AdapterContext) -> TelegramAdapter:
    from adapters.telegram.adapter import TelegramAdapter
    token = context.secret(bot.token, field=f"bots[{index}].token")
    webhook_url = secret = None
    if bot.transport == "webhook":
        webhook_url = context.route("telegram", bot.name, "webhook")
        secret = await context.bindings.webhook_secret(bot.name)
        context.redactor.add(secret)
    return TelegramAdapter(bot_id=bot.name, token=token, api_base_url=bot.api_base_url, webhook_url=webhook_url,
                           webhook_secret=secret, poll_timeout=context.poll_timeout,
                           on_api_trouble=partial(context.api_trouble, "telegram"), reacts=bot.binding.reaction)


async def _mattermost(index: int, bot: MattermostBotSpec, context: AdapterContext) -> MattermostAdapter:
    from adapters.mattermost.adapter import MattermostAdapter
    token = context.secret(bot.token, field=f"bots[{index}].token")
    webhook_token = None
    if bot.webhook_token:
        webhook_token = context.secret(bot.webhook_token, field=f"bots[{index}].webhook_token")
    action_url = context.route("mattermost", bot.name, "actions") if context.public_url else None
    command_url = context.route("mattermost", bot.name, "commands") if context.public_url else None
    action_key = await context.bindings.webhook_secret(bot.name)  # signs approval buttons; shared by replicas
    context.redactor.add(action_key)
    return MattermostAdapter(bot_id=bot.name, token=token, server_url=bot.api_base_url, transport=bot.transport,
                             webhook_token=webhook_token, team=bot.team, action_url=action_url, action_key=action_key,
                             on_api_trouble=partial(context.api_trouble, "mattermost"), command_url=command_url)


def _slack(index: int, bot: SlackBotSpec, context: AdapterContext) -> SlackAdapter:
    """The bot token posts; the app-level token opens Socket Mode; the signing secret checks HTTP events."""
    from adapters.slack.adapter import SlackAdapter
    from adapters.slack.assistant import AssistantWelcome
    field = f"bots[{index}]"
    token = context.secret(bot.token, field=f"{field}.token")
    app_token = context.secret(bot.app_token, field=f"{field}.app_token") if bot.app_token else None
    signing_secret = context.secret(bot.signing_secret, field=f"{field}.signing_secret") if bot.signing_secret else None
    if token.startswith("xapp-"):
        raise ConfigError(f"{field}.token: {bot.token} holds an app-level token (xapp-…); token takes the bot "
                          "token (xoxb-…) and app_token the xapp- one")
    if app_token is not None and app_token.startswith("xox"):
        raise ConfigError(f"{field}.app_token: {bot.app_token} holds a bot or user token (xox…); app_token takes "
                          "the app-level token (xapp-…) from the app's Basic Information page")
    return SlackAdapter(bot_id=bot.name, token=token, transport=bot.transport, app_token=app_token,
                        signing_secret=signing_secret, api_base_url=bot.api_base_url,
                        allow_bots=bot.binding.allow_bots, on_api_trouble=partial(context.api_trouble, "slack"),
                        greeting=AssistantWelcome(title=bot.binding.title, prompts=tuple(
                            (prompt.title, prompt.message) for prompt in bot.binding.suggested_prompts)),
                        reacts=bot.binding.reaction)
