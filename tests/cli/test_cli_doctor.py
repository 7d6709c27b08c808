"""`gateway doctor` says whether a deployment will work, against local platform, model, MCP and storage servers,
and never prints a secret, however the servers quote it back."""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from aiohttp import web

from tests.conftest import POSTGRES, REDIS
from tests.support.cli_process import Finished, run_gateway
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.model_catalog import ModelCatalog
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import refused_port
from tests.support.loopback import serving
from tests.support.mcp_runs import SERVER_SCRIPT

TELEGRAM_TOKEN = "424242:AAH7qZk0vXwTn3RmYp9LcB2sDfGh5JkLq8w"
MATTERMOST_TOKEN = "m" * 26
MODEL_KEY = "sk-Zq8wJ3nVb7Xc4Lm1Pt6Rk9Hs2Df5Gy0"


@pytest_asyncio.fixture
async def catalog() -> AsyncIterator[ModelCatalog]:
    async with ModelCatalog(models=("llama3.1", "qwen2.5-coder", "gpt-4o-mini"), key=MODEL_KEY).running() as running:
        yield running


def profile(base_url: str, model: str, *, key: str | None = "${MODEL_KEY}") -> dict[str, Any]:
    return {"provider": "openai-chat", "base_url": base_url, "model": model, **({"api_key": key} if key else {})}


def write_config(tmp_path: Path, content: dict[str, Any]) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(content))
    return path


@pytest_asyncio.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as server:
        server.add_bot(TELEGRAM_TOKEN, username="helper_bot")
        yield server


def helper_bot(telegram: FakeTelegram) -> list[dict[str, Any]]:
    """A bot that signs in, for configs about other things (a config needs one)."""
    return [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram.url,
             "agent": "helper"}]


def by_name(finished: Finished) -> dict[str, str]:
    """Each check line of the text form, keyed by the checked thing (`bot tg (telegram)`)."""
    return {line[6:].split(": ", 1)[0]: line for line in finished.stdout_lines[:-1]}


async def test_every_bot_signs_in_and_every_model_is_asked_with_its_key(tmp_path: Path,
                                                                        catalog: ModelCatalog) -> None:
    async with FakeTelegram() as telegram, FakeSlack() as slack, FakeMattermost() as mattermost:
        telegram.add_bot(TELEGRAM_TOKEN, username="helper_bot")
        app = slack.add_app("helper")
        with refused_port() as down_port:
            down = f"http://127.0.0.1:{down_port}/v1"
            config = write_config(tmp_path, {
                "models": {"good": profile(catalog.base("ok"), "llama3.1"),
                           "wrongkey": profile(catalog.base("ok"), "llama3.1", key="${OTHER_KEY}"),
                           "typo": profile(catalog.base("ok"), "qwen2.5-codr"),
                           "failing": profile(catalog.base("broken"), "llama3.1"),
                           "listed": profile(catalog.base("listing"), "qwen2.5-coder"),
                           "wrongpath": profile(f"{catalog.url}/v1", "llama3.1"),
                           "moved": profile(f"{catalog.url}/moved/v1", "llama3.1"),
                           "down": profile(down, "llama3.1")},
                "agents": [{"name": "helper", "model": "good"}, {"name": "offline", "model": "test"}],
                "bots": [
                    {"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram.url,
                     "agent": "helper"},
                    {"name": "tgproxy", "platform": "telegram", "token": "${TG_TOKEN}",
                     "api_base_url": f"{catalog.url}/telegram", "agent": "helper"},
                    {"name": "sl", "platform": "slack", "token": "${SL_TOKEN}", "app_token": "${SL_APP_TOKEN}",
                     "api_base_url": slack.url, "agent": "helper"},
                    {"name": "mm", "platform": "mattermost", "token": "${MM_TOKEN}", "api_base_url": mattermost.url,
                     "agent": "helper"}]})
            finished = await run_gateway("doctor", "-c", str(config), cwd=tmp_path, env={
                "TG_TOKEN": TELEGRAM_TOKEN, "SL_TOKEN": app.token, "SL_APP_TOKEN": app.app_token,
                "MM_TOKEN": "not-the-token-of-any-bot", "MODEL_KEY": MODEL_KEY, "OTHER_KEY": "sk-revoked-key-0000"})
    assert finished.returncode == 1, finished.stdout + finished.stderr
    lines = by_name(finished)
    assert lines["bot tg (telegram)"] == "ok    bot tg (telegram): signed in as @helper_bot (user id 424242)"
    assert lines["bot tgproxy (telegram)"] == (
        f"FAIL  bot tgproxy (telegram): {catalog.url}/telegram answered HTTP 404 with an empty body: wrong API URL or "
        "proxy path — fix: set api_base_url to the Bot API's root (https://api.telegram.org)")
    assert lines["bot sl (slack)"].startswith("ok    bot sl (slack): signed in as @helper in Local Slack")
    assert lines["bot mm (mattermost)"].startswith("FAIL  bot mm (mattermost): mattermost refused the token (HTTP 401")
    assert lines["bot mm (mattermost)"].endswith("put it in MM_TOKEN")
    assert lines["model good"] == (f"ok    model good: llama3.1 at {catalog.base('ok')}: the server knows the model "
                                   "and accepts the key")
    assert lines["model wrongkey"].startswith("FAIL  model wrongkey: the server refused the key (HTTP 401: ")
    assert lines["model wrongkey"].endswith("— fix: put a key the server accepts in OTHER_KEY")
    assert lines["model typo"] == (
        "FAIL  model typo: qwen2.5-codr is not a model this server knows (HTTP 404: The model `qwen2.5-codr` does "
        "not exist or you do not have access to it.) — fix: correct the model of models.typo; did you mean "
        "qwen2.5-coder?")
    assert lines["model failing"] == (
        "FAIL  model failing: the server failed (HTTP 500: The server had an error while processing your request) "
        "— fix: retry later; if it persists, see the model server's status or log")
    assert lines["model listed"].startswith("ok    model listed: qwen2.5-coder at ")
    assert lines["model wrongpath"] == (
        f"FAIL  model wrongpath: {catalog.url}/v1/models/llama3.1 answered HTTP 404 with an empty body: wrong API URL "
        "or proxy path — fix: correct base_url (OpenAI-compatible ones end in /v1)")
    assert lines["model down"] == (f"FAIL  model down: cannot reach {down}: connection refused — fix: start the model "
                                   "server, or correct its base_url")
    assert lines["model moved"] == (
        f"FAIL  model moved: {catalog.url}/moved/v1/models/llama3.1 redirects to {catalog.base('ok')}/models/llama3.1 "
        "— fix: set base_url to the address it redirects to, if that is the provider")
    assert lines["model test"] == "ok    model test: test runs in this process; nothing to reach"
    assert finished.stdout_lines[-1].endswith(" 8 failed")
    assert not any(request.startswith("POST") for request in catalog.requests)  # nothing spent
    assert "Traceback" not in finished.stderr


async def test_exits_0_when_everything_answers_and_registers_nothing(tmp_path: Path, catalog: ModelCatalog) -> None:
    async with FakeTelegram() as telegram:
        telegram.add_bot(TELEGRAM_TOKEN, username="helper_bot")
        config = write_config(tmp_path, {
            "models": {"good": profile(catalog.base("ok"), "llama3.1")},
            "agents": [{"name": "helper", "model": "good"}],
            "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram.url,
                      "agent": "helper"}]})
        finished = await run_gateway("doctor", "-c", str(config), cwd=tmp_path, env={
            "TG_TOKEN": TELEGRAM_TOKEN, "MODEL_KEY": MODEL_KEY, "DATABASE_URL": f"sqlite:///{tmp_path}/gw.db"})
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert finished.stdout_lines[-1] == "4 checks: 3 ok, 1 warning(s), 0 failed"  # no database file yet: a warning
    assert not any(call.method in ("setWebhook", "deleteWebhook", "getUpdates") for call in telegram.calls)


async def test_mcp_servers_list_their_tools_and_storage_answers(tmp_path: Path, telegram: FakeTelegram) -> None:
    with refused_port() as down_port:
        config = write_config(tmp_path, {
            "mcp_servers": [{"name": "issues", "command": sys.executable, "args": [str(SERVER_SCRIPT)]},
                            {"name": "tracker", "url": f"http://127.0.0.1:{down_port}/mcp", "timeout": 5}],
            "agents": [{"name": "helper", "model": "test", "mcp_servers": ["issues", "tracker"]}],
            "bots": helper_bot(telegram)})
        finished = await run_gateway("doctor", "-c", str(config), cwd=tmp_path, env={
            "TG_TOKEN": TELEGRAM_TOKEN, "DATABASE_URL": POSTGRES, "REDIS_URL": REDIS})
        unreachable = await run_gateway("doctor", "-c", str(config), cwd=tmp_path, env={"TG_TOKEN": TELEGRAM_TOKEN,
            "DATABASE_URL": f"postgresql://postgres@127.0.0.1:{down_port}/test",
            "REDIS_URL": f"redis://127.0.0.1:{down_port}/0"})
    lines = by_name(finished)
    assert lines["mcp issues"].startswith("ok    mcp issues: lists 5 tool(s), 5 offered: issues_list_issues, ")
    assert lines["mcp tracker"].startswith("FAIL  mcp tracker: cannot be reached (")
    assert lines["redis"].startswith("ok    redis: redis://127.0.0.1:")
    assert lines["database"].startswith("ok    database: postgresql+psycopg://postgres@127.0.0.1")
    down = by_name(unreachable)
    assert down["redis"].startswith(f"FAIL  redis: cannot reach redis://127.0.0.1:{down_port}/0 (")
    assert down["database"].startswith(f"FAIL  database: cannot use postgresql+psycopg://postgres@127.0.0.1:{down_port}")
    assert unreachable.returncode == 1


async def test_a_capability_key_that_is_not_set_fails(tmp_path: Path, telegram: FakeTelegram) -> None:
    config = write_config(tmp_path, {"agents": [{"name": "helper", "model": "test", "capabilities": [
        {"id": "web_research", "config": {"method": "tavily"}, "secret_id": "${TAVILY_API_KEY}"}]}],
        "bots": helper_bot(telegram)})
    finished = await run_gateway("doctor", "-c", str(config), cwd=tmp_path, env={"TAVILY_API_KEY": "",
                                                                                  "TG_TOKEN": TELEGRAM_TOKEN})
    assert by_name(finished)["key TAVILY_API_KEY (web_research)"] == (
        "FAIL  key TAVILY_API_KEY (web_research): agent helper needs TAVILY_API_KEY, which is not set — fix: set "
        "TAVILY_API_KEY in the environment or in GATEWAY_SECRETS_FILE")
    assert finished.returncode == 1


async def test_names_a_model_key_that_is_not_set_as_check_does(tmp_path: Path, telegram: FakeTelegram,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = write_config(tmp_path, {"agents": [{"name": "helper", "model": "openai:gpt-4o"}],
                                     "bots": helper_bot(telegram)})
    finished = await run_gateway("doctor", "-c", str(config), cwd=tmp_path, env={"TG_TOKEN": TELEGRAM_TOKEN})
    assert finished.returncode == 1
    assert by_name(finished)["model openai:gpt-4o"] == (
        "FAIL  model openai:gpt-4o: 'openai:gpt-4o' needs OPENAI_API_KEY, which is not set in the environment — fix: "
        "set it in the environment or in GATEWAY_SECRETS_FILE")


async def test_a_model_string_typo_and_a_wrong_provider_key_fail_naming_what_to_change(
        tmp_path: Path, catalog: ModelCatalog, telegram: FakeTelegram) -> None:
    # `gateway check` refuses the typo against pydantic-ai's list; a profile marked unlisted reaches the server.
    config = write_config(tmp_path, {"models": {"typo": {"model": "openai-chat:gpt-4o-mnii", "unlisted": True}},
                                     "agents": [{"name": "helper", "model": "typo"}], "bots": helper_bot(telegram)})
    env = {"TG_TOKEN": TELEGRAM_TOKEN, "OPENAI_BASE_URL": catalog.base("ok")}
    typo = await run_gateway("doctor", "-c", str(config), cwd=tmp_path, env={**env, "OPENAI_API_KEY": MODEL_KEY})
    refused = await run_gateway("doctor", "-c", str(config), cwd=tmp_path, env={**env, "OPENAI_API_KEY": "sk-old"})
    assert by_name(typo)["model typo"].endswith(
        "— fix: correct the agent's model; did you mean gpt-4o-mini?")
    assert by_name(refused)["model typo"].endswith(
        "— fix: put a key the provider accepts in OPENAI_API_KEY")
    assert typo.returncode == refused.returncode == 1


class Quoting:
    """Every platform and model API answering as badly as possible: refusing, and quoting the credential back."""

    @staticmethod
    def application() -> web.Application:
        app = web.Application()
        app.router.add_get("/bot{token}/getMe", Quoting.telegram)
        app.router.add_post("/api/auth.test", Quoting.slack)
        app.router.add_get("/api/v4/users/me", Quoting.mattermost)
        app.router.add_get("/openai/v1/models/{model_id}", Quoting.model)
        app.router.add_get("/failing/v1/models/{model_id}", Quoting.model_failing)
        return app

    @staticmethod
    async def telegram(request: web.Request) -> web.Response:
        token = request.match_info["token"]
        return web.json_response({"ok": False, "error_code": 401,
                                  "description": f"Unauthorized: the token `{token[:24]}…` was rejected"}, status=401)

    @staticmethod
    async def slack(request: web.Request) -> web.Response:
        return web.json_response({"ok": False, "error": f"invalid token {request.headers['Authorization']}"})

    @staticmethod
    async def mattermost(request: web.Request) -> web.Response:
        return web.json_response({"message": f"session {request.headers['Authorization'][7:]} expired"}, status=401)

    @staticmethod
    async def model(request: web.Request) -> web.Response:
        key = request.headers["Authorization"].removeprefix("Bearer ")
        return web.json_response({"error": {"message": f"Incorrect API key provided: {key[:14]}****{key[-4:]}",
                                            "code": "invalid_api_key"}}, status=401)

    @staticmethod
    async def model_failing(request: web.Request) -> web.Response:
        return web.Response(status=500, text=f"upstream said: {request.headers['Authorization']}")


def fragments(secret: str) -> set[str]:
    """Every 6-character piece of what is secret in `secret` (a Telegram token's part after the colon)."""
    private = secret.split(":", 1)[1] if secret.split(":", 1)[0].isdigit() else secret
    return {private[i:i + 6] for i in range(len(private) - 5)}


@pytest.mark.parametrize("form", ["text", "json"])
async def test_no_secret_nor_a_piece_of_one_is_ever_printed(tmp_path: Path, form: str) -> None:
    values = {"TG_TOKEN": f"7{secrets.randbelow(10**9)}:{secrets.token_urlsafe(26)}",
              "SL_TOKEN": f"xoxb-{secrets.token_urlsafe(30)}", "SL_APP_TOKEN": f"xapp-1-{secrets.token_urlsafe(30)}",
              "MM_TOKEN": secrets.token_hex(13), "MODEL_KEY": f"sk-proj-{secrets.token_urlsafe(32)}",
              "FILE_KEY": f"sk-file-{secrets.token_urlsafe(32)}", "DB_PASSWORD": secrets.token_urlsafe(16),
              "REDIS_PASSWORD": secrets.token_urlsafe(16), "PROXY_PASSWORD": secrets.token_urlsafe(16)}
    secrets_file = tmp_path / "secrets.env"
    secrets_file.write_text(f"FILE_KEY={values['FILE_KEY']}\n")
    async with serving(Quoting.application()) as url:
        with refused_port() as down_port:
            config = write_config(tmp_path, {
                "models": {"hosted": profile(f"{url}/openai/v1", "gpt-4o"),
                           "filed": profile(f"{url}/openai/v1", "gpt-4o", key="${FILE_KEY}"),
                           "failing": profile(f"{url}/failing/v1", "gpt-4o")},
                "agents": [{"name": "helper", "model": "hosted"}, {"name": "other", "model": "failing"},
                           {"name": "proxied", "model": "openai:gpt-4o"}],
                "bots": [
                    {"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": url,
                     "agent": "helper"},
                    {"name": "sl", "platform": "slack", "token": "${SL_TOKEN}", "app_token": "${SL_APP_TOKEN}",
                     "api_base_url": url, "agent": "helper"},
                    {"name": "mm", "platform": "mattermost", "token": "${MM_TOKEN}", "api_base_url": url,
                     "agent": "helper"}]})
            proxy = f"http://gateway:{values['PROXY_PASSWORD']}@127.0.0.1:{down_port}/v1"
            env = {**{name: value for name, value in values.items() if name != "FILE_KEY"},
                   "OPENAI_API_KEY": values["MODEL_KEY"], "OPENAI_BASE_URL": proxy,
                   "GATEWAY_SECRETS_FILE": str(secrets_file),
                   "DATABASE_URL": f"postgresql://postgres:{values['DB_PASSWORD']}@127.0.0.1:{down_port}/test",
                   "REDIS_URL": f"redis://:{values['REDIS_PASSWORD']}@127.0.0.1:{down_port}/0"}
            args = ["doctor", "-c", str(config), *(["--json"] if form == "json" else [])]
            finished = await run_gateway(*args, cwd=tmp_path, env=env)
    assert finished.returncode == 1
    printed = finished.stdout + finished.stderr
    if form == "json":
        found = json.loads(finished.stdout)
        assert found["ok"] is False
        assert {check["status"] for check in found["checks"]} == {"fail"}
        printed = json.dumps(found, ensure_ascii=False) + finished.stderr
    assert len([line for line in finished.stdout_lines if "FAIL" in line or '"fail"' in line]) >= 1
    assert f"cannot reach http://127.0.0.1:{down_port}/v1" in printed  # the proxy's URL, without its password
    for name, secret in values.items():
        assert secret not in printed, name
        leaked = sorted(piece for piece in fragments(secret) if piece in printed)
        assert leaked == [], f"{name}: {leaked}"


async def test_json_names_each_check_with_status_reason_and_fix(tmp_path: Path, catalog: ModelCatalog,
                                                                telegram: FakeTelegram) -> None:
    config = write_config(tmp_path, {
        "models": {"good": profile(catalog.base("ok"), "llama3.1"), "failing": profile(catalog.base("broken"), "x")},
        "agents": [{"name": "helper", "model": "good"}, {"name": "other", "model": "failing"}],
        "bots": helper_bot(telegram)})
    finished = await run_gateway("doctor", "-c", str(config), "--json", cwd=tmp_path, env={
        "MODEL_KEY": MODEL_KEY, "DATABASE_URL": POSTGRES, "TG_TOKEN": TELEGRAM_TOKEN})
    assert finished.returncode == 1
    found = json.loads(finished.stdout)
    assert found["ok"] is False
    checks = {check["name"]: check for check in found["checks"]}
    assert set(checks) == {"bot tg (telegram)", "model good", "model failing", "redis", "database"}
    assert all(set(check) == {"name", "status", "reason", "fix"} for check in checks.values())
    assert checks["model good"]["status"] == "ok" and checks["model good"]["fix"] is None
    assert checks["model failing"] == {
        "name": "model failing", "status": "fail",
        "reason": "the server failed (HTTP 500: The server had an error while processing your request)",
        "fix": "retry later; if it persists, see the model server's status or log"}
