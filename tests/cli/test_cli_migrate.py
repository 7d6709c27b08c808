"""`gateway migrate`: the schema brought up to date once, as a deploy's one-shot job runs it before `serve`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from alembic.script import ScriptDirectory

from storage.migrate import alembic_config
from tests.support.cli_process import run_gateway

EXAMPLE = Path(__file__).parents[2] / "examples" / "gateway.yaml"


async def test_migrate_brings_an_empty_database_to_the_latest_schema_in_one_line(tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'gw.db'}"}
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    first = await run_gateway("migrate", cwd=tmp_path, env=env)
    again = await run_gateway("migrate", "-c", str(EXAMPLE), cwd=tmp_path, env=env)
    assert (first.returncode, first.stdout_lines) == (0, [
        f"database at sqlite+aiosqlite:///{tmp_path / 'gw.db'}: schema at revision {head}"]), first.stderr
    assert (again.returncode, again.stdout_lines) == (0, first.stdout_lines), again.stderr
    with sqlite3.connect(tmp_path / "gw.db") as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"alembic_version", "inbox", "agents", "bindings"} <= tables


async def test_migrate_refuses_a_broken_config_before_touching_the_database(tmp_path: Path) -> None:
    broken = tmp_path / "gateway.yaml"
    broken.write_text("agents: []\nbots: [{name: x}]\n")
    result = await run_gateway("migrate", "-c", str(broken), cwd=tmp_path,
                               env={"DATABASE_URL": f"sqlite:///{tmp_path / 'gw.db'}"})
    assert result.returncode == 2
    assert not (tmp_path / "gw.db").exists()
