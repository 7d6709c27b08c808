"""`gateway mattermost doctor BOT`: connect one Mattermost bot and say what an admin must fix.

`gateway check` connects nowhere; this does, because Mattermost's own answers to a wrong token or a
bot outside its team are cryptic (`Invalid or expired session`, an empty channel list).
"""

from __future__ import annotations

from collections.abc import Callable

from adapters.mattermost.adapter import MattermostAdapter
from gateway.config.schema import ConfigError, GatewayConfig, MattermostBotSpec, resolve_secret
from gateway.config.secrets import SecretSource


async def run_doctor(config: GatewayConfig, bot_name: str, secrets: SecretSource, echo: Callable[[str], None]) -> bool:
    """Print one line per check; True when every check passed. Raises `ConfigError` for an unknown bot."""
    adapter = build_checked_adapter(config, bot_name, secrets)
    echo(f"bot {bot_name}: mattermost at {adapter.server_url}")
    checks = await adapter.checkup()
    for check in checks:
        echo(f"  {'ok  ' if check.ok else 'FAIL'}  {check.text}")
    return all(check.ok for check in checks)


def build_checked_adapter(config: GatewayConfig, bot_name: str, secrets: SecretSource) -> MattermostAdapter:
    found = [(i, bot) for i, bot in enumerate(config.bots) if bot.name == bot_name]
    mattermost = [(i, bot) for i, bot in found if isinstance(bot, MattermostBotSpec)]
    if not mattermost:
        names = ", ".join(b.name for b in config.bots if isinstance(b, MattermostBotSpec)) or "none configured"
        raise ConfigError(f"bots: {bot_name!r} is not a mattermost bot of this config (mattermost bots: {names})")
    index, bot = mattermost[0]
    token = resolve_secret(bot.token, secrets, field=f"bots[{index}].token").get_secret_value()
    webhook_token = None
    if bot.webhook_token:
        webhook_token = resolve_secret(bot.webhook_token, secrets, field=f"bots[{index}].webhook_token")
    return MattermostAdapter(bot_id=bot.name, token=token, server_url=bot.api_base_url, transport=bot.transport,
                             webhook_token=webhook_token.get_secret_value() if webhook_token else None, team=bot.team)
