"""Setting up a Slack bot: the manifest to paste, and `gateway check` naming what the transport still needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from adapters.slack.manifest import BOT_EVENTS
from gateway.cli.main import app
from gateway.config.schema import ConfigError, load_config
from gateway.config.secrets import SecretSource
from gateway.pipeline.metrics import GatewayMetrics
from gateway.server.logs import SecretRedactor
from gateway.server.platforms import AdapterContext, build_adapter
from tests.support.fakes.slack import FakeSlack
from tests.support.scripted import echoes
from tests.support.slack_harness import SlackBot, running_gateway

AGENTS = [{"name": "helper", "model": "openai-chat:gpt-4o-mini"}]


def write_config(tmp_path: Path, bot: dict[str, Any], *, public_url: str | None = None) -> Path:
    config = {"agents": AGENTS, "bots": [{"name": "team-slack", "platform": "slack", "token": "${SLACK_BOT_TOKEN}",
                                          "agent": "helper", **bot}],
              "server": {"public_url": public_url} if public_url else {}}
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_manifest_for_socket_mode_needs_no_public_url(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"app_token": "${SLACK_APP_TOKEN}"})
    result = CliRunner().invoke(app, ["slack", "manifest", "team-slack", "-c", str(path)])
    assert result.exit_code == 0, result.output
    manifest = yaml.safe_load(result.output)
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is True
    assert settings["event_subscriptions"] == {"bot_events": list(BOT_EVENTS)}
    assert settings["interactivity"] == {"is_enabled": True}
    assert {"app_mentions:read", "chat:write", "im:history", "users:read", "files:write", "files:read"} <= set(
        manifest["oauth_config"]["scopes"]["bot"])
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True, "people can DM the bot"


def test_manifest_for_the_events_api_points_slack_at_the_public_url(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"transport": "http", "signing_secret": "${SLACK_SIGNING_SECRET}"},
                        public_url="https://gw.example.org")
    result = CliRunner().invoke(app, ["slack", "manifest", "team-slack", "-c", str(path)])
    settings = yaml.safe_load(result.output)["settings"]
    url = "https://gw.example.org/slack/team-slack"
    assert (settings["socket_mode_enabled"], settings["event_subscriptions"]["request_url"],
            settings["interactivity"]["request_url"]) == (False, f"{url}/events", f"{url}/interactions")


def test_manifest_of_an_unknown_bot_names_the_slack_bots(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"app_token": "${SLACK_APP_TOKEN}"})
    result = CliRunner().invoke(app, ["slack", "manifest", "nobody", "-c", str(path)])
    assert result.exit_code == 2
    assert "'nobody' is not a Slack bot of this config (Slack bots: team-slack)" in result.output


@pytest.mark.parametrize(("bot", "message"), [
    pytest.param({}, "bots['team-slack'].app_token: transport 'socket' needs the app-level token",
                 id="socket-needs-app-token"),
    pytest.param({"transport": "http"},
                 "bots['team-slack'].signing_secret: transport 'http' needs the app's Signing Secret",
                 id="http-needs-signing-secret"),
])
def test_check_names_the_setting_the_transport_needs(tmp_path: Path, bot: dict[str, Any], message: str) -> None:
    path = write_config(tmp_path, bot, public_url="https://gw.example.org")
    result = CliRunner().invoke(app, ["check", "-c", str(path)])
    assert result.exit_code == 2
    assert message in result.output


def test_check_accepts_a_complete_slack_bot(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"app_token": "${SLACK_APP_TOKEN}"})
    result = CliRunner().invoke(app, ["check", "-c", str(path)])
    assert result.exit_code == 0, result.output
    assert "bot team-slack: slack via socket, answered by agent helper" in result.output


async def test_swapped_tokens_are_refused_naming_the_field_but_not_the_secret(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {"app_token": "${SLACK_APP_TOKEN}"}))
    secrets = SecretSource(environ={"SLACK_BOT_TOKEN": "xapp-1-A1-secretvalue", "SLACK_APP_TOKEN": "xoxb-1-2"})
    context = AdapterContext(secrets=secrets, redactor=SecretRedactor(), bindings=None,  # type: ignore[arg-type]
                             public_url=None, poll_timeout=1, api_trouble=GatewayMetrics({}).api_trouble)
    with pytest.raises(ConfigError) as refused:
        await build_adapter(0, config.bots[0], context)
    assert "bots[0].token: ${SLACK_BOT_TOKEN} holds an app-level token" in str(refused.value)
    assert "secretvalue" not in str(refused.value)


class SdkSpelledBot(SlackBot):
    """A bot whose `api_base_url` is written as slack-sdk spells a base URL, with the `/api/` path."""

    def spec(self, slack: FakeSlack) -> dict[str, Any]:
        return {**super().spec(slack), "api_base_url": f"{slack.url}/api/"}


async def test_an_api_base_url_with_the_sdks_api_path_connects_and_answers(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SdkSpelledBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await slack.user_says(dm, alice, "hello")
        await slack.wait_for(lambda: slack.texts(dm, by=bot.app) == ["echo: hello"])
