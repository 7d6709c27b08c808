"""`gateway serve`'s logs as a collector reads them: JSON lines, one per turn with its figures, no secret."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import yaml

from tests.support.cli_process import STARTS_WITHIN
from tests.support.fakes.model_server import FakeModelServer, Refusal
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import free_port

TOKEN = "434343:json-logs-token-value"


async def serve_one_turn(telegram: FakeTelegram, tmp_path: Path, *options: str) -> str:
    """Run `gateway serve` (stderr a pipe, not a terminal) through one answered message; its stderr."""
    telegram.add_bot(TOKEN, username="logs_bot")
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    config = tmp_path / "gateway.yaml"
    config.write_text(yaml.safe_dump({
        "agents": [{"name": "helper", "model": "test", "instructions": "Be brief."}],
        "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram.url,
                  "agent": "helper"}],
        "server": {"host": "127.0.0.1", "port": free_port()},
    }))
    env = {**os.environ, "TG_TOKEN": TOKEN, "DATABASE_URL": f"sqlite:///{tmp_path / 'gw.db'}"}
    env.pop("REDIS_URL", None)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "serve", "-c", str(config), *options, cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        await telegram.wait_for(lambda: any(c.method == "getUpdates" for c in telegram.calls),
                                timeout=STARTS_WITHIN)
        await telegram.user_says(TOKEN, chat, alice, "hello")
        await telegram.wait_for(lambda: [m["text"] for m in telegram.bot_messages(chat["id"])]
                                == ["success (no tool calls)"], timeout=20)
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(20):
            _, stderr = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, stderr.decode()[-2000:]
    return stderr.decode()


async def test_json_lines_by_default_with_one_line_per_turn(telegram: FakeTelegram, tmp_path: Path) -> None:
    stderr = await serve_one_turn(telegram, tmp_path, "--log-level", "DEBUG")
    lines = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    assert {"time", "level", "logger", "message"} <= set(lines[0])
    turns = [line["turn"] for line in lines if "turn" in line]
    assert len(turns) == 1
    turn = turns[0]
    assert turn["bot"] == "tg" and turn["outcome"] == "answered" and turn["model"] == "test"
    assert turn["final_ms"] >= turn["first_post_ms"] >= 0
    assert turn["requests"] == 1 and turn["input_tokens"] > 0 and turn["output_tokens"] > 0
    assert len(turn["conversation"]) == 16 and "1001" not in json.dumps(turn), "the chat id is hashed"
    assert any(line["logger"] == "httpx" and line["level"] == "INFO" for line in lines), "requests shown at DEBUG"
    assert TOKEN.split(":")[1] not in stderr


async def test_text_on_request_and_no_request_lines_at_info(telegram: FakeTelegram, tmp_path: Path) -> None:
    stderr = await serve_one_turn(telegram, tmp_path, "--log-format", "text")
    assert " INFO gateway.pipeline.router: turn bot=tg " in stderr
    assert "outcome=answered" in stderr
    assert "httpx" not in stderr, "HTTP client request lines only at DEBUG"
    assert TOKEN.split(":")[1] not in stderr


async def test_a_model_providers_request_lines_stay_out_of_info(telegram: FakeTelegram, tmp_path: Path) -> None:
    """The OpenAI client's requests (through httpx2) to a model server that answers 500: the turn's one WARNING,
    no request line."""
    telegram.add_bot(TOKEN, username="logs_bot")
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with FakeModelServer("error", refusal=Refusal(status=500, type="server_error")) as model:
        config = tmp_path / "gateway.yaml"
        config.write_text(yaml.safe_dump({
            "models": {"remote": model.profile()},
            "agents": [{"name": "helper", "model": "remote", "instructions": "Be brief."}],
            "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram.url,
                      "agent": "helper"}],
            "server": {"host": "127.0.0.1", "port": free_port()},
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
            await telegram.wait_for(lambda: any("try again" in m["text"] for m in telegram.bot_messages(chat["id"])),
                                    timeout=20)
            process.send_signal(signal.SIGINT)
            async with asyncio.timeout(20):
                _, stderr = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    lines = [json.loads(line) for line in stderr.decode().splitlines() if line.strip()]
    assert model.requests == 2
    assert [line["logger"] for line in lines if line["logger"].startswith(("httpx", "httpcore"))] == []
    assert [line["level"] for line in lines if line["logger"] == "gateway.pipeline.runtime"] == ["WARNING"]
