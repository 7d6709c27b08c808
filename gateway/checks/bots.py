"""What `gateway check` refuses about bots beyond their schema: a webhook address the platform will not call, a
surface the platform cannot show (a reaction outside Telegram, feedback buttons Mattermost cannot call back), and
allowlist or approver entries that can never name anyone on the bot's platform."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from gateway.config.schema import BotSpec, GatewayConfig, MattermostBotSpec, TelegramBotSpec

USER_ID = {
    # Telegram user ids are positive integers (https://core.telegram.org/bots/api#user).
    "telegram": (re.compile(r"^[0-9]+$"), "numeric user id (12345678)"),
    # Slack user ids start with U, or W on Enterprise Grid (api.slack.com/changelog/2016-08-11-user-id-format-changes).
    "slack": (re.compile(r"^[UW][A-Z0-9]{2,}$", re.IGNORECASE), "user id (U0123ABCD)"),
    # Mattermost ids are 26 lower-case letters and digits.
    "mattermost": (re.compile(r"^[a-z0-9]{26}$", re.IGNORECASE), "26-character user id"),
}
"""What a bare list entry must look like to be a user id on each platform; anything else is an `@handle`."""


def bot_problems(config: GatewayConfig) -> list[str]:
    """Each bot's webhook address and people lists, checked against what its platform accepts."""
    problems: list[str] = []
    for i, bot in enumerate(config.bots):
        problems += _public_url_problems(config, bot, i) + _surface_problems(config, bot, i)
        binding = bot.binding
        lists = [("allow", binding.allow), ("approvals.approvers", binding.approvals.approvers)]
        for field, entries in lists:
            problems += [f"bots[{i}].binding.{field}[{k}]: {message}" for k, entry in enumerate(entries)
                         if (message := entry_problem(bot.platform, entry)) is not None]
    return problems


def entry_problem(platform: str, entry: str) -> str | None:
    """Why a people-list entry can never match anyone on `platform` (entries match a user id, or `@handle`)."""
    if entry.startswith("@"):
        return None
    pattern, shape = USER_ID[platform]
    if pattern.match(entry):
        return None
    return (f"{entry!r} is neither a {platform} {shape} nor an @handle, so it never matches anyone; write "
            f"'@{entry}' for the person's username, or their {shape}")


def _public_url_problems(config: GatewayConfig, bot: BotSpec, i: int) -> list[str]:
    """Telegram and Slack call webhooks over HTTPS only; a local Bot API server or a Slack-compatible server
    (`api_base_url`) is not bound by that, nor is Mattermost, whose outgoing webhooks may be plain HTTP."""
    url = config.server.public_url
    if not bot.needs_public_url or url is None or bot.api_base_url is not None or isinstance(bot, MattermostBotSpec):
        return []
    if urlsplit(url).scheme.lower() == "https":
        return []
    name = "Telegram" if isinstance(bot, TelegramBotSpec) else "Slack"
    return [f"server.public_url: bot {bot.name!r} uses {name}'s {bot.transport!r} transport, and {name} calls "
            "webhooks over HTTPS only; set the https:// address of a TLS reverse proxy in front of this server, "
            f"or use transport: {'polling' if name == 'Telegram' else 'socket'}"]


def _surface_problems(config: GatewayConfig, bot: BotSpec, i: int) -> list[str]:
    """`reaction` is a first sign on Telegram and Slack; Mattermost calls feedback buttons back at
    `server.public_url`."""
    problems: list[str] = []
    if bot.binding.reaction and isinstance(bot, MattermostBotSpec):
        problems.append(f"bots[{i}].binding.reaction: a reaction as the first sign is Telegram's and Slack's; "
                        "Mattermost shows typing, kept up until the answer: remove it")
    if bot.binding.feedback and isinstance(bot, MattermostBotSpec) and not config.server.public_url:
        problems.append(f"bots[{i}].binding.feedback: Mattermost calls the 👍 / 👎 buttons back at "
                        "server.public_url; set it, or answers carry no buttons")
    return problems
