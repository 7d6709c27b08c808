"""The `gateway` command as an operator uses it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select
from typer.testing import CliRunner

from gateway.cli.main import app
from storage.db import Database
from storage.models import AgentRow, BindingRow, BotRow

EXAMPLE = Path(__file__).parents[2] / "examples" / "gateway.yaml"


def test_check_accepts_the_example_without_connecting_anywhere() -> None:
    result = CliRunner().invoke(app, ["check", "-c", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "bot team-telegram: telegram via polling, answered by agent helper" in result.output


def test_check_reports_every_problem_and_exits_2(tmp_path: Path) -> None:
    broken = yaml.safe_load(EXAMPLE.read_text())
    broken["bots"][0]["binding"]["access"] = "alow"
    broken["bots"][0]["token"] = "123456:secret-literal"
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(broken))
    result = CliRunner().invoke(app, ["check", "-c", str(path)])
    assert result.exit_code == 2
    assert "bots['team-telegram'].binding.access: 'alow' is not one of open, allowlist" in result.output
    assert "secret-literal" not in result.output


def test_apply_upserts_and_versions_agents(tmp_path: Path, database_url: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", database_url)
    runner = CliRunner()
    assert runner.invoke(app, ["apply", "-c", str(EXAMPLE)]).exit_code == 0
    changed = yaml.safe_load(EXAMPLE.read_text())
    changed["agents"][0]["instructions"] = "Answer in haiku."
    changed["bots"][0]["binding"]["access"] = "allowlist"
    changed["bots"][0]["binding"]["allow"] = ["@alice"]
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(changed))
    result = runner.invoke(app, ["apply", "-c", str(path)])
    assert result.exit_code == 0, result.output
    assert "agent helper: version 2" in result.output

    async def stored() -> tuple[list, list, list]:
        db = Database(database_url)
        try:
            async with db.session() as session:
                agents = (await session.execute(select(AgentRow.name, AgentRow.version))).all()
                bots = (await session.execute(select(BotRow.name, BotRow.settings))).all()
                bindings = (await session.execute(select(BindingRow.bot_name, BindingRow.spec))).all()
                return agents, bots, bindings
        finally:
            await db.close()

    agents, bots, bindings = asyncio.run(stored())
    assert [tuple(a) for a in agents] == [("helper", 2)]
    assert bots[0].settings["token"] == "${TELEGRAM_BOT_TOKEN}", "only the reference is stored"
    assert bindings[0].spec["allow"] == ["@alice"]


SERVED = """\
models:
  hosted: openai:gpt-4o-mini
agents:
  - name: helper
    model: hosted
bots:
  - name: team-telegram
    platform: telegram
    token: ${TELEGRAM_BOT_TOKEN}
    agent: helper
"""


def test_check_warns_about_unset_keys_and_serve_refuses_before_migrating(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TELEGRAM_BOT_TOKEN", "OPENAI_API_KEY", "GATEWAY_SECRETS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'gateway.db'}")
    path = tmp_path / "gateway.yaml"
    path.write_text(SERVED)
    unset = [f"{path}:2:3: models.hosted: 'openai:gpt-4o-mini' needs OPENAI_API_KEY, which is not set in the "
             "environment",
             f"{path}:9:5: bots['team-telegram'].token: TELEGRAM_BOT_TOKEN is not set in the environment or the "
             "secrets file"]
    checked = CliRunner().invoke(app, ["check", "-c", str(path)])
    assert checked.exit_code == 0
    assert checked.stderr.splitlines() == [line.replace(": ", ": warning: ", 1) for line in unset] + [
        "warning: gateway serve refuses to start on a machine where these are not set"]
    served = CliRunner().invoke(app, ["serve", "-c", str(path)])
    assert (served.exit_code, served.stderr.splitlines()) == (2, unset)
    assert not (tmp_path / "gateway.db").exists(), "nothing was migrated"


def test_check_reports_a_model_typo_that_would_fail_every_message(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(SERVED.replace("openai:gpt-4o-mini", "opneai:gpt-4o-mini"))
    result = CliRunner().invoke(app, ["check", "-c", str(path)])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (f"{path}:2:3: models.hosted: Unknown model: opneai:gpt-4o-mini. "
                                             "Did you mean 'openai:gpt-4o-mini'?")
