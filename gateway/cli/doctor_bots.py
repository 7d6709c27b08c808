"""Each bot signs in with the platform call its adapter opens with: Telegram's getMe, Slack's auth.test (and, for
Socket Mode, apps.connections.open with the app-level token), Mattermost's users/me.

The calls are made here over plain HTTP rather than through the adapters, because the doctor must tell apart
what the SDKs fold together: python-telegram-bot reports a proxy's empty 404 as a refused token, after logging
a JSON traceback. Nothing is registered and no transport is opened.
"""

from __future__ import annotations

import httpx

from adapters.unreachable import describe_unreachable
from gateway.cli.doctor_check import Check, Status, json_object, not_the_api, server_error, shorten
from gateway.config.schema import (
    BotSpec,
    ConfigError,
    MattermostBotSpec,
    SlackBotSpec,
    TelegramBotSpec,
    reference_name,
    resolve_secret,
)
from gateway.config.secrets import SecretSource

TELEGRAM_API = "https://api.telegram.org"
SLACK_API = "https://slack.com"
"""The adapters' defaults, repeated so that the doctor does not load the platform SDKs to learn two URLs."""
SLACK_REFUSALS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
                            "not_allowed_token_type"})


async def check_bot(client: httpx.AsyncClient, index: int, bot: BotSpec, secrets: SecretSource) -> Check:
    name = f"bot {bot.name} ({bot.platform})"
    try:
        token = resolve_secret(bot.token, secrets, field=f"bots[{index}].token").get_secret_value()
        match bot:
            case TelegramBotSpec():
                status, reason, fix = await _telegram(client, bot, token)
            case SlackBotSpec():
                app_token = (resolve_secret(bot.app_token, secrets, field=f"bots[{index}].app_token")
                             .get_secret_value() if bot.transport == "socket" and bot.app_token else None)
                status, reason, fix = await _slack(client, bot, token, app_token)
            case MattermostBotSpec():
                status, reason, fix = await _mattermost(client, bot, token)
    except ConfigError as exc:
        return Check(name=name, status="fail", reason=str(exc),
                     fix="set the variable in the environment or in GATEWAY_SECRETS_FILE")
    except httpx.HTTPError as exc:
        return Check(name=name, status="fail", reason=describe_unreachable(api_url(bot), exc).split(" — ")[0],
                     fix="start the server, or correct api_base_url")
    return Check(name=name, status=status, reason=reason, fix=fix)


Outcome = tuple[Status, str, str | None]


async def _telegram(client: httpx.AsyncClient, bot: TelegramBotSpec, token: str) -> Outcome:
    base = api_url(bot)
    answer = await client.get(f"{base}/bot{token}/getMe")
    body = json_object(answer)
    renew = f"ask @BotFather for the bot's token (/token) and put it in {_variable(bot.token)}"
    if body is None:
        return "fail", not_the_api(base, answer), "set api_base_url to the Bot API's root (https://api.telegram.org)"
    said = shorten(body.get("description", ""))
    if answer.status_code in (401, 404):  # the Bot API answers 404 to a token that is not even well formed
        return "fail", f"telegram refused the token (HTTP {answer.status_code}: {said})", renew
    if answer.status_code >= 500:
        return "fail", server_error(answer, said), "retry later; a proxy in front of the Bot API may be down"
    me = body.get("result")
    if answer.status_code != 200 or not body.get("ok") or not isinstance(me, dict):
        return "fail", f"getMe answered HTTP {answer.status_code}: {said or 'not a bot'}", renew
    return "ok", f"signed in as @{me.get('username')} (user id {me.get('id')})", None


async def _slack(client: httpx.AsyncClient, bot: SlackBotSpec, token: str, app_token: str | None) -> Outcome:
    base = f"{api_url(bot).rstrip('/')}/api"
    answer = await client.post(f"{base}/auth.test", headers={"Authorization": f"Bearer {token}"})
    refused = _slack_refusal(base, answer, "bot token", f"put the app's Bot User OAuth Token (xoxb-…) in "
                                                          f"{_variable(bot.token)}, reinstalling the app if revoked")
    if refused is not None:
        return refused
    me = json_object(answer) or {}
    if app_token is not None and bot.app_token is not None:
        answer = await client.post(f"{base}/apps.connections.open", headers={"Authorization": f"Bearer {app_token}"})
        refused = _slack_refusal(base, answer, "app-level token", "generate an app-level token with "
                                 f"connections:write (Basic Information) and put it in {_variable(bot.app_token)}")
        if refused is not None:
            return refused
    return "ok", f"signed in as @{me.get('user')} in {me.get('team')} (user id {me.get('user_id')})", None


def _slack_refusal(base: str, answer: httpx.Response, what: str, fix: str) -> Outcome | None:
    body = json_object(answer)
    if body is None:
        return "fail", not_the_api(base, answer), "set api_base_url to Slack's root (https://slack.com)"
    if answer.status_code >= 500:
        return "fail", server_error(answer, body.get("error")), "retry later; Slack or a proxy is failing"
    if body.get("ok") is True:
        return None
    error = body.get("error", f"HTTP {answer.status_code}")
    if error in SLACK_REFUSALS:
        return "fail", f"slack refused the {what} ({error})", fix
    return "fail", f"slack answered {error} to the {what}", fix


async def _mattermost(client: httpx.AsyncClient, bot: MattermostBotSpec, token: str) -> Outcome:
    base = api_url(bot).rstrip("/")
    answer = await client.get(f"{base}/api/v4/users/me", headers={"Authorization": f"Bearer {token}"})
    body = json_object(answer)
    root = "set api_base_url to the server's root, as in the browser (no /api/v4)"
    if body is None:
        return "fail", not_the_api(base, answer), root
    said = shorten(body.get("message", ""))
    if answer.status_code == 401:
        return "fail", f"mattermost refused the token (HTTP 401: {said})", (
            f"create a token for the bot account (Integrations > Bot Accounts) and put it in {_variable(bot.token)}")
    if answer.status_code >= 500:
        return "fail", server_error(answer, said), "retry later; see the Mattermost server's log"
    if answer.status_code != 200 or "id" not in body:
        return "fail", f"{base}/api/v4/users/me answered HTTP {answer.status_code}: wrong API URL or proxy path", root
    return "ok", f"signed in as @{body.get('username')} (user id {body['id']})", None


def api_url(bot: BotSpec) -> str:
    match bot:
        case TelegramBotSpec():
            return (bot.api_base_url or TELEGRAM_API).rstrip("/")
        case SlackBotSpec():
            return bot.api_base_url or SLACK_API
        case MattermostBotSpec():
            return bot.api_base_url


def _variable(reference: str) -> str:
    return reference_name(reference) or "the bot's token setting"
