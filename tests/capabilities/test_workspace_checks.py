"""`gateway check` refuses a `service` workspace with nowhere to run, naming the field and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import make_url

from capabilities import default_registry
from gateway.checks.workspaces import sandbox_problems, sqlite_file
from gateway.config.schema import CapabilityEntry, GatewayConfig
from tests.support.cli_process import run_gateway

SANDBOXD = {"kind": "sandboxd", "url": "http://sandboxd.internal:8080", "token": "${SANDBOXD_TOKEN}",
            "runtimes": ["python"]}


def config(entry: dict[str, Any], sandboxes: dict[str, Any] | None = None) -> GatewayConfig:
    return GatewayConfig.model_validate({
        "agents": [{"name": "a", "model": "m", "capabilities": [{"id": "sandbox", "config": entry}]}],
        "bots": [{"name": "b", "platform": "telegram", "token": "${T}", "agent": "a"}],
        "sandboxes": sandboxes or {}})


@pytest.mark.parametrize(("entry", "sandboxes", "expected"), [
    pytest.param({"backend": "service"}, {}, "config.backend: 'service' needs a sandbox connection", id="none"),
    pytest.param({"backend": "service", "connection_id": "gpu"}, {"docker": SANDBOXD},
                 "config.connection_id: 'gpu' is not one of the sandboxes (docker)", id="unknown"),
    pytest.param({"backend": "service"}, {"one": SANDBOXD, "two": SANDBOXD}, "none is marked default", id="no-default"),
    pytest.param({"backend": "service", "runtime": "node"}, {"docker": SANDBOXD},
                 "config.runtime: 'node' is not a runtime sandbox 'docker' allows (python)", id="runtime"),
])
def test_a_service_workspace_without_a_usable_connection_is_refused(entry: dict[str, Any], sandboxes: dict[str, Any],
                                                                    expected: str) -> None:
    [problem] = sandbox_problems(config(entry, sandboxes))
    assert problem.startswith("agents[0].capabilities[0].config") and expected in problem


def test_the_only_connection_or_the_marked_one_is_the_default() -> None:
    assert sandbox_problems(config({"backend": "service"}, {"docker": SANDBOXD})) == []
    marked = {"one": SANDBOXD, "two": {**SANDBOXD, "default": True}}
    assert config({}, marked).default_sandbox() == "two"
    assert sandbox_problems(config({"backend": "service"}, marked)) == []


def test_connection_id_and_runtime_belong_to_the_service_backend_only() -> None:
    entry = CapabilityEntry(id="sandbox", config={"connection_id": "docker"})
    [problem] = default_registry().validate_entry(entry, path="agents[0].capabilities[0]")
    assert "backend 'service' only" in problem


def test_a_bubblewrap_connection_on_a_host_without_bubblewrap_is_refused_with_the_install_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    local = {"kind": "bubblewrap", "directory": str(tmp_path)}
    [problem] = sandbox_problems(config({"backend": "service"}, {"local": local}))
    assert problem.startswith("sandboxes.local.kind") and "apt-get install -y bubblewrap" in problem


def write_shell_config(path: Path, directory: Path) -> Path:
    path.write_text(yaml.safe_dump({
        "agents": [{"name": "a", "model": "test",
                    "capabilities": [{"id": "sandbox", "config": {"backend": "service"}}]}],
        "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": "http://127.0.0.1:9",
                  "agent": "a"}],
        "sandboxes": {"local": {"kind": "bubblewrap", "directory": str(directory)}}}))
    return path


@pytest.mark.parametrize(("directory", "database", "what"), [
    pytest.param("workspaces", "./gateway.db", "the SQLite database (DATABASE_URL)", id="beside-the-default-database"),
    pytest.param(".", "/var/tmp/elsewhere.db", "the config file", id="holding-the-config"),
    pytest.param("state", "./state/deep/gateway.db", "the SQLite database (DATABASE_URL)", id="holding-the-database"),
])
async def test_check_refuses_workspaces_nested_with_the_gateways_own_files(directory: str, database: str, what: str,
                                                                           tmp_path: Path) -> None:
    config = write_shell_config(tmp_path / "gateway.yaml", tmp_path / directory)
    checked = await run_gateway("check", "-c", str(config), cwd=tmp_path,
                                env={"TG_TOKEN": "1:a", "DATABASE_URL": f"sqlite:///{database}"})
    assert checked.returncode == 2
    [line] = [line for line in checked.stderr_lines if f"and {what} (" in line]
    assert "sandboxes.local.directory:" in line
    assert "are nested; keep the workspaces in a directory of their own" in line


async def test_check_accepts_workspaces_apart_from_the_gateways_files(tmp_path: Path) -> None:
    (tmp_path / "gateway").mkdir()
    config = write_shell_config(tmp_path / "gateway" / "gateway.yaml", tmp_path / "workspaces")
    secrets = tmp_path / "gateway" / "secrets.env"
    secrets.write_text("TG_TOKEN=1:a\n")
    checked = await run_gateway("check", "-c", str(config), cwd=tmp_path / "gateway",
                                env={"GATEWAY_SECRETS_FILE": str(secrets)})
    assert checked.returncode == 0, checked.stderr_lines
    config = write_shell_config(config, tmp_path / "gateway" / "workspaces")
    nested = await run_gateway("check", "-c", str(config), cwd=tmp_path / "gateway",
                               env={"GATEWAY_SECRETS_FILE": str(secrets)})
    assert nested.returncode == 2
    assert any("the secrets file (GATEWAY_SECRETS_FILE)" in line for line in nested.stderr_lines)


@pytest.mark.parametrize("url", ["sqlite:///gateway.db", "sqlite:////srv/state/gateway.db", "sqlite+aiosqlite:///./g.db",
                                 "sqlite://", "sqlite:///:memory:", "sqlite:///g.db?mode=ro",
                                 "postgresql+psycopg://u:p@db:5432/gateway", "sqlite+pysqlite:///a/b.db"])
def test_the_sqlite_file_is_read_as_sqlalchemy_reads_it(url: str) -> None:
    """`gateway check` reads a SQLite DATABASE_URL without importing SQLAlchemy, and finds the same file."""
    parsed = make_url(url)
    expected = (Path(parsed.database) if parsed.get_backend_name() == "sqlite"
                and parsed.database not in (None, "", ":memory:") else None)
    assert sqlite_file(url) == expected
