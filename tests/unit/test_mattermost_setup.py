"""Setting up a Mattermost bot: the server URL is checked before anything connects; the doctor says what to fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gateway.cli.main import app, run_mattermost_doctor
from gateway.config.schema import ConfigError, GatewayConfig, load_config
from gateway.config.secrets import SecretSource
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.mattermost_harness import MattermostBot


def config_with(**bot: Any) -> dict[str, Any]:
    return {"agents": [{"name": "helper", "model": "test"}],
            "bots": [{"name": "mm", "platform": "mattermost", "token": "${MM_TOKEN}", "agent": "helper",
                      "api_base_url": "https://chat.example.org", **bot}]}


def write(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    url: str
    error: str | None = None
    """None: accepted, as `normalized`."""
    normalized: str | None = None


URL_CASES = [
    Case(id="aws-metadata", url="http://169.254.169.254/latest", error="is a link-local or cloud metadata address"),
    Case(id="aws-metadata-ipv6", url="http://[fd00:ec2::254]", error="is a link-local or cloud metadata address"),
    Case(id="gcp-metadata", url="http://metadata.google.internal", error="is a link-local or cloud metadata address"),
    Case(id="metadata-as-a-number", url="http://2852039166", error="is a link-local or cloud metadata address"),
    Case(id="metadata-ipv4-mapped", url="http://[::ffff:169.254.169.254]", error="cloud metadata address"),
    Case(id="metadata-siit", url="http://[::ffff:0:a9fe:a9fe]", error="cloud metadata address"),
    Case(id="metadata-nat64", url="http://[64:ff9b::169.254.169.254]", error="cloud metadata address"),
    Case(id="credentials", url="https://admin:hunter2@chat.example.org", error="must not carry credentials"),
    Case(id="not-http", url="ftp://chat.example.org", error="must start with http:// or https://"),
    Case(id="no-host", url="https://", error="names no host"),
    Case(id="api-path", url="https://chat.example.org/api/v4", error="without /api/v4"),
    Case(id="query", url="https://chat.example.org/?team=acme", error="must not have a query"),
    Case(id="trailing-slash", url="https://chat.example.org/", normalized="https://chat.example.org"),
    Case(id="subpath", url="https://example.org/chat/", normalized="https://example.org/chat"),
    Case(id="private-address", url="http://10.1.2.3:8065", normalized="http://10.1.2.3:8065"),
    Case(id="loopback", url="http://127.0.0.1:8065/", normalized="http://127.0.0.1:8065"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in URL_CASES])
def test_the_server_url_is_checked_and_normalized(tmp_path: Path, case: Case) -> None:
    path = write(tmp_path, config_with(api_base_url=case.url))
    if case.error is None:
        assert load_config(path).bots[0].api_base_url == case.normalized
        return
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert "bots['mm'].api_base_url: " in str(raised.value) and case.error in str(raised.value)
    assert "hunter2" not in str(raised.value)


def test_gateway_check_refuses_a_metadata_address_as_the_server_url(tmp_path: Path) -> None:
    path = write(tmp_path, config_with(api_base_url="http://169.254.169.254"))
    result = CliRunner().invoke(app, ["check", "-c", str(path)])
    assert result.exit_code == 2
    assert "bots['mm'].api_base_url: '169.254.169.254' is a link-local or cloud metadata address" in result.output


def test_gateway_check_accepts_a_server_behind_a_vpn(tmp_path: Path) -> None:
    path = write(tmp_path, config_with(api_base_url="http://192.168.10.5:8065", team="acme"))
    result = CliRunner().invoke(app, ["check", "-c", str(path)])
    assert result.exit_code == 0, result.output
    assert "bot mm: mattermost via websocket, answered by agent helper" in result.output


def test_the_server_url_is_required(tmp_path: Path) -> None:
    config = config_with()
    del config["bots"][0]["api_base_url"]
    with pytest.raises(ConfigError, match=r"bots\['mm'\].api_base_url: Field required"):
        load_config(write(tmp_path, config))


def test_the_webhook_transport_needs_the_webhook_token(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"bots\['mm'\]: transport is 'webhook' but webhook_token is not set"):
        load_config(write(tmp_path, config_with(transport="webhook")))


# -- the doctor ----------------------------------------------------------------------------------


def doctor_config(mattermost: FakeMattermost, bot: MattermostBot) -> GatewayConfig:
    return GatewayConfig.model_validate({"agents": [{"name": "assistant", "model": "test"}],
                                         "bots": [bot.spec(mattermost.url)]})


async def test_the_doctor_confirms_a_working_bot(mattermost: FakeMattermost) -> None:
    bot = MattermostBot(team="acme").register(mattermost)
    team = mattermost.add_team("acme", members=[bot.user])
    mattermost.add_channel(team, "town-square", members=[bot.user])
    lines: list[str] = []
    healthy = await run_mattermost_doctor(doctor_config(mattermost, bot), bot.name, SecretSource(environ=bot.env()),
                                          lines.append)
    assert healthy, lines
    assert any("signed in as @helper" in line for line in lines)
    assert any("member of 1 channel(s)" in line for line in lines)
    assert any("event stream" in line and "authenticated" in line for line in lines)


async def test_the_doctor_names_a_wrong_token(mattermost: FakeMattermost) -> None:
    bot = MattermostBot().register(mattermost)
    config = doctor_config(mattermost, bot)
    bot.token = "revoked"
    lines: list[str] = []
    assert not await run_mattermost_doctor(config, bot.name, SecretSource(environ=bot.env()), lines.append)
    assert "FAIL" in lines[1] and "refused the token" in lines[1]


async def test_the_doctor_names_the_missing_team(mattermost: FakeMattermost) -> None:
    bot = MattermostBot(team="ops").register(mattermost)
    mattermost.add_team("acme", members=[bot.user])
    lines: list[str] = []
    assert not await run_mattermost_doctor(doctor_config(mattermost, bot), bot.name, SecretSource(environ=bot.env()),
                                lines.append)
    assert any(line.lstrip().startswith("FAIL") and "not a member of team 'ops'" in line for line in lines)


def test_the_doctor_refuses_a_bot_that_is_not_a_mattermost_bot(tmp_path: Path) -> None:
    path = write(tmp_path, config_with())
    result = CliRunner().invoke(app, ["mattermost", "doctor", "nobody", "-c", str(path)])
    assert result.exit_code == 2
    assert "'nobody' is not a mattermost bot of this config (mattermost bots: mm)" in result.output
