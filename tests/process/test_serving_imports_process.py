"""A replica that starts and answers a turn runs every statement through `Database.run` on the Core tables: it
never loads SQLAlchemy's ORM, its async session, greenlet or the async SQLite driver (about 10 MB of each
replica's memory). Read from `sys.modules` of a real process after a real turn, not measured."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from storage.db import Database
from storage.migrate import upgrade
from tests.support.cli_process import STARTS_WITHIN, gateway_env
from tests.support.fakes.telegram import FakeTelegram

TOKEN = "424243:serving-imports-token"
ASYNC_SIDE = ("sqlalchemy.orm", "sqlalchemy.ext.asyncio", "storage.models", "greenlet", "aiosqlite", "alembic")

REPLICA = """
import asyncio, json, sys
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.server.app import Gateway

async def main() -> None:
    config = GatewayConfig.model_validate(json.loads(sys.argv[1]))
    settings = Settings(database_url=sys.argv[2], redis_url=None)
    async with Gateway(config, settings, secrets=SecretSource(environ={"TG_TOKEN": sys.argv[3]})):
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    loaded = sorted({name for name in sys.modules for prefix in json.loads(sys.argv[4])
                     if name == prefix or name.startswith(prefix + ".")})
    print(json.dumps(loaded), flush=True)

asyncio.run(main())
"""


async def test_a_replica_answering_a_turn_loads_no_orm_nor_async_session(telegram: FakeTelegram,
                                                                          tmp_path: Path) -> None:
    telegram.add_bot(TOKEN, username="lean_bot")
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    url = f"sqlite+aiosqlite:///{tmp_path / 'gw.db'}"
    db = Database(url)
    try:
        await upgrade(db)  # as a deployment's migrate job does: the replica finds the schema current
    finally:
        await db.close()
    config = {"agents": [{"name": "helper", "model": "test", "instructions": "Be brief."}],
              "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram.url,
                        "agent": "helper"}]}
    replica = await asyncio.create_subprocess_exec(
        sys.executable, "-c", REPLICA, json.dumps(config), url, TOKEN, json.dumps(ASYNC_SIDE), cwd=tmp_path,
        env=gateway_env(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    assert replica.stdin is not None and replica.stdout is not None
    try:
        async with asyncio.timeout(STARTS_WITHIN):
            assert (await replica.stdout.readline()).strip() == b"ready"
        await telegram.user_says(TOKEN, chat, alice, "hello")
        await telegram.wait_for(lambda: [m["text"] for m in telegram.bot_messages(chat["id"])]
                                == ["success (no tool calls)"], timeout=20)
        replica.stdin.write(b"stop\n")
        async with asyncio.timeout(20):
            stdout, stderr = await replica.communicate()
    finally:
        if replica.returncode is None:
            replica.kill()
            await replica.wait()
    assert replica.returncode == 0, stderr.decode()[-2000:]
    assert json.loads(stdout.decode().strip().splitlines()[-1]) == []
