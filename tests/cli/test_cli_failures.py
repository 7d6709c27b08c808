"""Every failure of the `gateway` command is one line naming the fix, a non-zero exit, and no traceback."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli_process import run_gateway
from tests.support.harness import refused_port

READ_ONLY = [pytest.param(["approvals"], id="approvals"), pytest.param(["identities"], id="identities"),
             pytest.param(["memory", "clear", "--agent", "helper", "--yes"], id="memory-clear")]


def write_config(tmp_path: Path, **server: Any) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump({
        "agents": [{"name": "helper", "model": "test"}],
        "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": "http://127.0.0.1:9",
                  "agent": "helper"}],
        "server": {"host": "127.0.0.1", "port": 0, **server},
    }))
    return path


@pytest.mark.parametrize("command", READ_ONLY)
async def test_a_read_only_command_before_apply_says_to_apply_and_creates_no_file(
        command: list[str], tmp_path: Path) -> None:
    finished = await run_gateway(*command, cwd=tmp_path, env={"DATABASE_URL": f"sqlite:///{tmp_path / 'gw.db'}"})
    assert finished.returncode == 1
    [line] = finished.stderr_lines
    assert "run `gateway apply -c gateway.yaml` first" in line and "gw.db" in line
    assert not (tmp_path / "gw.db").exists()


async def test_a_database_without_tables_says_to_apply(database_url: str, tmp_path: Path) -> None:
    finished = await run_gateway("approvals", cwd=tmp_path, env={"DATABASE_URL": database_url})
    assert finished.returncode == 1
    [line] = finished.stderr_lines
    assert "run `gateway apply -c gateway.yaml` first" in line


@pytest.mark.parametrize("command", READ_ONLY)
async def test_an_unreachable_database_is_named_without_its_password(command: list[str], tmp_path: Path) -> None:
    with refused_port() as port:
        url = f"postgresql://gateway:hunter2-secret@127.0.0.1:{port}/gateway"
        finished = await run_gateway(*command, cwd=tmp_path, env={"DATABASE_URL": url})
    assert finished.returncode == 1
    [line] = finished.stderr_lines
    assert line.startswith("cannot use the database at postgresql+psycopg://gateway:***@127.0.0.1:")
    assert "Connection refused" in line and "is DATABASE_URL right?" in line
    assert "hunter2" not in finished.stderr


async def test_a_port_in_use_names_the_address_and_the_setting(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        config = write_config(tmp_path, port=port)
        finished = await run_gateway("serve", "-c", str(config), "--log-level", "warning", cwd=tmp_path,
                                     env={"TG_TOKEN": "123:abc", "DATABASE_URL": f"sqlite:///{tmp_path / 'gw.db'}"})
    assert finished.returncode == 1
    [line] = finished.stderr_lines
    assert line.startswith(f"server: cannot listen on 127.0.0.1:{port}: address already in use")
    assert "server.port" in line


async def test_an_unknown_log_level_lists_the_known_ones(tmp_path: Path) -> None:
    finished = await run_gateway("serve", "-c", str(write_config(tmp_path)), "--log-level", "foo", cwd=tmp_path)
    assert finished.returncode == 2
    assert finished.stderr_lines == ["--log-level: 'foo' is not one of DEBUG, INFO, WARNING, ERROR"]


async def test_a_missing_secrets_file_is_named(tmp_path: Path) -> None:
    finished = await run_gateway("serve", "-c", str(write_config(tmp_path)), cwd=tmp_path,
                                 env={"GATEWAY_SECRETS_FILE": str(tmp_path / "secrets.env")})
    assert finished.returncode == 2
    [line] = finished.stderr_lines
    assert line.startswith(f"GATEWAY_SECRETS_FILE: cannot read '{tmp_path / 'secrets.env'}'")
    assert not (tmp_path / "gateway.db").exists(), "nothing is migrated before the secrets are read"


@pytest.mark.parametrize(("model", "problem", "checked"), [
    pytest.param("opneai:gpt-4o-mini", "Unknown model: opneai:gpt-4o-mini. Did you mean 'openai:gpt-4o-mini'?",
                 (2, ""), id="model-typo"),
    pytest.param("openai:gpt-4o-mini", "'openai:gpt-4o-mini' needs OPENAI_API_KEY, which is not set in the "
                 "environment", (0, "warning: "), id="provider-key-unset"),
])
async def test_serve_refuses_what_check_finds_before_it_migrates_or_connects(
        model: str, problem: str, checked: tuple[int, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = write_config(tmp_path)
    config.write_text(config.read_text().replace("model: test", f"model: {model}"))
    env = {"TG_TOKEN": "123:abc", "DATABASE_URL": f"sqlite:///{tmp_path / 'gw.db'}"}
    check = await run_gateway("check", "-c", str(config), cwd=tmp_path, env=env)
    serve = await run_gateway("serve", "-c", str(config), cwd=tmp_path, env=env)
    status, label = checked
    assert check.returncode == status
    assert check.stderr_lines[0] == f"{config}:2:3: {label}agents['helper'].model: {problem}"
    assert (serve.returncode, serve.stderr_lines) == (2, [f"{config}:2:3: agents['helper'].model: {problem}"])
    assert not (tmp_path / "gw.db").exists(), "nothing was migrated"


@pytest.mark.parametrize("command", [pytest.param(["check"], id="check"), pytest.param(["serve"], id="serve")])
async def test_a_missing_config_file_says_how_to_write_one(command: list[str], tmp_path: Path) -> None:
    finished = await run_gateway(*command, cwd=tmp_path)
    assert finished.returncode == 2
    assert finished.stderr_lines == [
        "gateway.yaml: no such file; write one with `gateway init -c gateway.yaml`, or copy examples/gateway.yaml"]
    assert not (tmp_path / "gateway.db").exists()


async def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    finished = await run_gateway("--debug", "approvals", cwd=tmp_path)
    assert finished.returncode == 1
    assert "Traceback (most recent call last)" in finished.stderr
    assert "gateway apply" in finished.stderr_lines[-1]


async def test_a_mattermost_doctor_that_cannot_connect_says_so_in_one_line(tmp_path: Path) -> None:
    with refused_port() as port:
        config = tmp_path / "gateway.yaml"
        config.write_text(yaml.safe_dump({
            "agents": [{"name": "helper", "model": "test"}],
            "bots": [{"name": "mm", "platform": "mattermost", "token": "${MM_TOKEN}", "agent": "helper",
                      "api_base_url": f"http://127.0.0.1:{port}"}],
        }))
        finished = await run_gateway("mattermost", "doctor", "mm", "-c", str(config), cwd=tmp_path,
                                     env={"MM_TOKEN": "t" * 26})
    assert finished.returncode == 1
    assert finished.stdout_lines[-1].strip() == (f"FAIL  cannot reach http://127.0.0.1:{port}: connection refused — "
                                                 "is the server running, and is api_base_url right?")
    assert "Traceback" not in finished.stderr


async def test_version_and_short_help(tmp_path: Path) -> None:
    version = await run_gateway("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout_lines == ["chat-gateway 0.1.0"]
    short = await run_gateway("serve", "-h", cwd=tmp_path)
    assert short.returncode == 0 and "--log-level" in short.stdout
