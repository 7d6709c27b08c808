"""`gateway serve` as an operator runs it: a real process, a bot token, a model string, then Ctrl-C."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import httpx
import yaml

from tests.support.cli_process import STARTS_WITHIN
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import free_port

TOKEN = "424242:serve-process-token-value"


async def test_serve_answers_then_shuts_down_cleanly_on_ctrl_c(telegram: FakeTelegram, tmp_path: Path) -> None:
    telegram.add_bot(TOKEN, username="serve_bot")
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    port = free_port()
    config = tmp_path / "gateway.yaml"
    config.write_text(yaml.safe_dump({
        "agents": [{"name": "helper", "model": "test", "instructions": "Be brief."}],
        "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram.url,
                  "agent": "helper"}],
        "server": {"host": "127.0.0.1", "port": port},
    }))
    env = {**os.environ, "TG_TOKEN": TOKEN, "DATABASE_URL": f"sqlite:///{tmp_path / 'gw.db'}"}
    env.pop("REDIS_URL", None)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "serve", "-c", str(config), cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        await telegram.wait_for(lambda: any(c.method == "getUpdates" for c in telegram.calls),
                                timeout=STARTS_WITHIN)
        await telegram.user_says(TOKEN, chat, alice, "hello")
        await telegram.wait_for(lambda: [m["text"] for m in telegram.bot_messages(chat["id"])]
                                == ["success (no tool calls)"], timeout=20)
        async with httpx.AsyncClient() as client:
            ready = await client.get(f"http://127.0.0.1:{port}/readyz")
        assert ready.json() == {"ready": True, "status": "ok", "degraded": {}, "checks": {"database": True},
                                "bots": {"tg": True}}
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(20):
            _, stderr = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, stderr.decode()[-2000:]
    assert "shutting down" in stderr.decode()
    assert TOKEN.split(":")[1] not in stderr.decode()
