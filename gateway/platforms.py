"""Builds each configured bot's adapter, resolving its credentials server-side."""

from __future__ import annotations

from dataclasses import dataclass

from adapters.base import Adapter
from adapters.telegram import TelegramAdapter
from gateway.bindings import BindingStore
from gateway.config import BotSpec, ConfigError, MattermostBotSpec, SlackBotSpec, TelegramBotSpec, resolve_secret
from gateway.logs import SecretRedactor
from gateway.secrets import SecretSource


@dataclass(frozen=True, slots=True, kw_only=True)
class AdapterContext:
    secrets: SecretSource
    redactor: SecretRedactor
    bindings: BindingStore
    public_url: str | None
    poll_timeout: int

    def secret(self, reference: str, *, field: str) -> str:
        """Resolve a `${ENV_VAR}` reference and keep its value out of every log line."""
        value = resolve_secret(reference, self.secrets, field=field).get_secret_value()
        self.redactor.add(value)
        return value

    def route(self, platform: str, bot_name: str, leaf: str) -> str:
        return f"{(self.public_url or '').rstrip('/')}/{platform}/{bot_name}/{leaf}"


async def build_adapter(index: int, bot: BotSpec, context: AdapterContext) -> Adapter:
    match bot:
        case TelegramBotSpec():
            return await _telegram(index, bot, context)
        case SlackBotSpec() | MattermostBotSpec():
            raise ConfigError(f"bots[{index}].platform: {bot.platform!r} is not supported by this build yet")


async def _telegram(index: int, bot: TelegramBotSpec, context: AdapterContext) -> TelegramAdapter:
    token = context.secret(bot.token, field=f"bots[{index}].token")
    webhook_url = secret = None
    if bot.transport == "webhook":
        webhook_url = context.route("telegram", bot.name, "webhook")
        secret = await context.bindings.webhook_secret(bot.name)
        context.redactor.add(secret)
    return TelegramAdapter(bot_id=bot.name, token=token, api_base_url=bot.api_base_url, webhook_url=webhook_url,
                           webhook_secret=secret, poll_timeout=context.poll_timeout)
