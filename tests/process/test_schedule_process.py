"""Two `gateway serve` processes on one PostgreSQL and one Redis fire one operator's schedule: each firing is posted
once, also when one replica is killed with kill -9 between firings, and every firing due while a replica ran is
there (the survivor posts what the dead one had claimed once its lease runs out). The cron has a seconds field, so
the test takes seconds, not minutes."""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime
from functools import partial
from itertools import pairwise
from pathlib import Path

import pytest
import yaml

from tests.conftest import REDIS
from tests.support.cli_process import gateway_env, until_serving
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import free_port
from tests.support.records import inbox_rows, until_done

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)

EVERY_TWO_SECONDS = "* * * * * */2"
TEXT = "Stand-up in five minutes"


@asynccontextmanager
async def serving(telegram: FakeTelegram, config: Path, env: dict[str, str],
                  port: int) -> AsyncIterator[asyncio.subprocess.Process]:
    """A `gateway serve` process once its readiness probe answers 200 with its bot signed in; stopped at the end
    with SIGTERM (running work finishes), unless the test killed it."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "serve", "-c", str(config), cwd=config.parent, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await until_serving(port)
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            async with asyncio.timeout(20):
                await process.wait()


def more_than(count: Callable[[], int], seen: int) -> bool:
    return count() > seen


def stamps(keys: list[str]) -> list[datetime]:
    return sorted(datetime.strptime(key.rsplit(":", 1)[1], "%Y%m%dT%H%M%SZ") for key in keys)


async def test_two_replicas_and_a_kill_post_every_firing_once(telegram: FakeTelegram, database_url: str,
                                                              tmp_path: Path) -> None:
    token = f"{uuid.uuid4().int % 10**9}:{uuid.uuid4().hex}"
    telegram.add_bot(token, username="schedule_bot")
    room = telegram.group(-3001, "Ops")
    bot_name = f"tg{uuid.uuid4().hex[:10]}"
    ports = [free_port(), free_port()]
    env = gateway_env({"TG_TOKEN": token, "DATABASE_URL": database_url, "REDIS_URL": REDIS})
    configs = []
    for port in ports:
        configs.append(tmp_path / f"gateway-{port}.yaml")
        configs[-1].write_text(yaml.safe_dump({
            "agents": [{"name": "helper", "model": "test", "instructions": "Be brief."}],
            "bots": [{"name": bot_name, "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram.url,
                      "agent": "helper"}],
            "schedules": [{"name": "standup", "cron": EVERY_TWO_SECONDS, "bot": bot_name, "chat": str(room["id"]),
                           "text": TEXT}],
            "server": {"host": "127.0.0.1", "port": port},
        }))

    def posted() -> int:
        return sum(m["text"] == TEXT for m in telegram.bot_messages(room["id"]))

    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(serving(telegram, configs[0], env, ports[0]))
        await stack.enter_async_context(serving(telegram, configs[1], env, ports[1]))
        await telegram.wait_for(lambda: posted() >= 2, timeout=20)
        # Killed between firings, once the second is done: a kill between a Telegram post and the write that records
        # it is a post's own crash window (README), not what this test is about.
        await until_done(database_url, 2)
        first.send_signal(signal.SIGKILL)
        await first.wait()
        after_kill = posted()
        await telegram.wait_for(lambda: posted() >= after_kill + 3, timeout=30)
        # What the dead replica had claimed is the survivor's once its lease runs out: wait, post by post, until
        # every firing stored before the kill is done.
        stored = {row.id for row in await inbox_rows(database_url)}
        async with asyncio.timeout(30):
            while any(row.id in stored and row.status != "done" for row in await inbox_rows(database_url)):
                await telegram.wait_for(partial(more_than, posted, posted()))
    rows = [row for row in await inbox_rows(database_url) if row.logical_id.startswith("schedule:standup:")]
    answered = [row.logical_id for row in rows if row.status == "done"]
    assert len(answered) == len({*answered}) == posted(), "every firing posted once, none twice"
    due = stamps([row.logical_id for row in rows])
    gaps = [later - earlier for earlier, later in pairwise(due)]
    assert {gap.total_seconds() for gap in gaps} == {2.0}, f"a firing went missing: {due}"
