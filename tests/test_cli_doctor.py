"""`gateway doctor` signs in every bot and reaches every model's server, against the local platform servers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
import yaml
from aiohttp import web

from tests.cli_process import run_gateway
from tests.fakes.mattermost import FakeMattermost
from tests.fakes.slack import FakeSlack
from tests.fakes.telegram import FakeTelegram
from tests.harness import refused_port
from tests.loopback import serving

TELEGRAM_TOKEN = "424242:doctor-token-value"
MATTERMOST_TOKEN = "m" * 26


@pytest_asyncio.fixture
async def model_server() -> AsyncIterator[str]:
    """An OpenAI-compatible server's address; it answers 404 to everything, which is enough to be reachable."""
    async with serving(web.Application()) as url:
        yield f"{url}/v1"


def doctor_config(tmp_path: Path, *, telegram: str, slack: str, mattermost: str, model_url: str,
                  down_port: int) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump({
        "models": {"local": {"provider": "openai-chat", "base_url": model_url, "model": "llama3.1"},
                   "down": {"provider": "openai-chat", "base_url": f"http://127.0.0.1:{down_port}/v1",
                            "model": "llama3.1"}},
        "agents": [{"name": "helper", "model": "local"}, {"name": "other", "model": "down"},
                   {"name": "offline", "model": "test"}],
        "bots": [
            {"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram, "agent": "helper"},
            {"name": "sl", "platform": "slack", "token": "${SL_TOKEN}", "app_token": "${SL_APP_TOKEN}",
             "api_base_url": slack, "agent": "helper"},
            {"name": "mm", "platform": "mattermost", "token": "${MM_TOKEN}", "api_base_url": mattermost,
             "agent": "helper"},
        ],
    }))
    return path


async def test_doctor_reports_every_bot_and_model_in_one_go(tmp_path: Path, model_server: str) -> None:
    async with FakeTelegram() as telegram, FakeSlack() as slack, FakeMattermost() as mattermost:
        telegram.add_bot(TELEGRAM_TOKEN, username="doctor_bot")
        app = slack.add_app("doctor")
        mattermost.add_bot(MATTERMOST_TOKEN, username="doctor")
        with refused_port() as down_port:
            config = doctor_config(tmp_path, telegram=telegram.url, slack=slack.url, mattermost=mattermost.url,
                                   model_url=model_server, down_port=down_port)
            finished = await run_gateway("doctor", "-c", str(config), cwd=tmp_path, env={
                "TG_TOKEN": TELEGRAM_TOKEN, "SL_TOKEN": app.token, "SL_APP_TOKEN": app.app_token,
                "MM_TOKEN": "not-the-token-of-any-bot"})
    assert finished.returncode == 1
    lines = finished.stdout_lines
    assert len(lines) == 6, finished.stdout + finished.stderr
    assert lines[0].startswith("ok    bot tg (telegram): signed in as @doctor_bot")
    assert lines[1].startswith("ok    bot sl (slack): signed in as @doctor")
    assert lines[2].startswith("FAIL  bot mm (mattermost): ") and "token" in lines[2]
    assert lines[3] == f"ok    model local: llama3.1 at {model_server}/ is reachable (HTTP 404)"
    assert lines[4].startswith("FAIL  model down: cannot reach http://127.0.0.1:")
    assert lines[4].endswith(": connection refused — is the model server running, and is its base_url right?")
    assert lines[5] == "ok    model test: test runs in this process; nothing to reach"
    assert "Traceback" not in finished.stderr


async def test_doctor_exits_0_when_everything_answers(tmp_path: Path) -> None:
    async with FakeTelegram() as telegram:
        telegram.add_bot(TELEGRAM_TOKEN, username="doctor_bot")
        config = tmp_path / "gateway.yaml"
        config.write_text(yaml.safe_dump({
            "agents": [{"name": "helper", "model": "test"}],
            "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram.url,
                      "agent": "helper"}]}))
        finished = await run_gateway("doctor", "-c", str(config), cwd=tmp_path, env={"TG_TOKEN": TELEGRAM_TOKEN})
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert len(finished.stdout_lines) == 2
    assert not any(call.method in ("setWebhook", "deleteWebhook", "getUpdates") for call in telegram.calls)


async def test_doctor_names_a_model_key_that_is_not_set_as_check_does(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with FakeTelegram() as telegram:
        telegram.add_bot(TELEGRAM_TOKEN, username="doctor_bot")
        config = tmp_path / "gateway.yaml"
        config.write_text(yaml.safe_dump({
            "agents": [{"name": "helper", "model": "openai:gpt-4o"}],
            "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram.url,
                      "agent": "helper"}]}))
        finished = await run_gateway("doctor", "-c", str(config), cwd=tmp_path, env={"TG_TOKEN": TELEGRAM_TOKEN})
    assert finished.returncode == 1
    assert finished.stdout_lines[1:] == [
        "FAIL  model openai:gpt-4o: 'openai:gpt-4o' needs OPENAI_API_KEY, which is not set in the environment"]
