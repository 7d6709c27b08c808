"""`gateway schedules`: the config's schedules with their next firing, and the reminders agents set."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gateway.cli.main import app
from storage.db import Database
from storage.migrate import upgrade
from storage.models import ScheduleMarkRow
from storage.reminders import NewReminder, Reminders

MORNING = datetime(2030, 1, 7, 8, 0, tzinfo=UTC)


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TG_TOKEN", "1:abc")
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump({
        "agents": [{"name": "helper", "model": "test"}],
        "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "agent": "helper"}],
        "schedules": [{"name": "morning", "cron": "0 9 * * 1-5", "timezone": "Europe/Berlin", "bot": "tg",
                       "chat": "-1001", "prompt": "Summarise the night."}]}))
    return path


def seed(database_url: str) -> None:
    async def work() -> None:
        db = Database(database_url)
        try:
            await upgrade(db)
            async with db.session() as session:
                session.add(ScheduleMarkRow(name="morning", cron="0 9 * * 1-5", timezone="Europe/Berlin",
                                            next_fire_at=MORNING))
                await session.commit()
            await Reminders(db).add(NewReminder(
                bot_name="tg", conversation_key="telegram:tg:1001:-", address={}, owner_key="identity:1",
                speaker={"display_name": "Alice"}, mode="message", text="Call Anna", recurrence=None,
                timezone="UTC", first_at=MORNING))
        finally:
            await db.close()
    asyncio.run(work())


def test_schedules_lists_each_with_its_next_firing_then_the_reminders(config: Path, database_url: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", database_url)
    seed(database_url)
    result = CliRunner().invoke(app, ["schedules", "-c", str(config)])
    assert result.exit_code == 0, result.output
    schedule, reminder = result.output.splitlines()
    assert schedule.startswith("schedule morning") and "next 09:00 Europe/Berlin, Mon 7 Jan 2030" in schedule
    assert reminder.startswith("reminder #1") and "set by Alice" in reminder and "'Call Anna'" in reminder


def test_schedules_before_any_start_says_when_each_would_fire(config: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'none.db'}")
    result = CliRunner().invoke(app, ["schedules", "-c", str(config)])
    assert result.exit_code == 0, result.output
    assert "09:00 Europe/Berlin" in result.output and "(from its first start)" in result.output
    assert not (tmp_path / "none.db").exists()
