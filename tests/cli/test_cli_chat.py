"""`gateway chat`: the configured agent in the terminal, a real process fed stdin, approvals as y/n."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import yaml

from tests.support.cli_process import gateway_env, run_gateway


def scripted_config(tmp_path: Path) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump({
        "agents": [{"name": "helper", "model": "demo:scripted", "capabilities": ["demo_ops"]},
                   {"name": "smoke", "model": "test"}],
        "bots": [{"name": "tg", "platform": "telegram", "token": "${TELEGRAM_BOT_TOKEN}", "agent": "helper"}],
    }))
    return path


async def test_chat_remembers_the_conversation_and_asks_before_a_gated_tool(tmp_path: Path) -> None:
    finished = await run_gateway("chat", "-c", str(scripted_config(tmp_path)), "--agent", "helper", cwd=tmp_path,
                                 stdin="Hi there\nWhat did I ask first?\nPlease restart the website.\ny\n")
    assert finished.returncode == 0, finished.stderr
    out = finished.stdout
    assert "helper> Hello! I'm a scripted model standing in for a real one. You said: Hi there" in out
    assert "helper> This conversation has 1 earlier answer(s). Your first message was: Hi there" in out
    assert "approve? [y/n] " in out
    assert "helper> Approved by" in out
    assert "helper> Done — the tool said: website restarted (demo: nothing was touched)" in out
    assert not (tmp_path / "gateway.db").exists(), "the chat keeps its conversation in a temporary database"


async def test_a_denied_call_is_not_run(tmp_path: Path) -> None:
    finished = await run_gateway("chat", "-c", str(scripted_config(tmp_path)), "--agent", "helper", cwd=tmp_path,
                                 stdin="Please restart the website.\nn\n")
    assert finished.returncode == 0, finished.stderr
    assert "helper> Denied by" in finished.stdout
    assert "website restarted" not in finished.stdout


async def test_chat_with_the_test_model_answers_each_line(tmp_path: Path) -> None:
    finished = await run_gateway("chat", "-c", str(scripted_config(tmp_path)), "--agent", "smoke", cwd=tmp_path,
                                 stdin="hello\n")
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout_lines[-2:] == ["you> smoke> success (no tool calls)", "you> "]


async def test_an_unknown_agent_is_named(tmp_path: Path) -> None:
    finished = await run_gateway("chat", "-c", str(scripted_config(tmp_path)), "--agent", "helpr", cwd=tmp_path)
    assert finished.returncode == 2
    assert finished.stderr_lines == [f"{tmp_path / 'gateway.yaml'}: agent 'helpr' is not one of helper, smoke"]


async def test_an_approval_is_asked_again_until_it_is_yes_or_no(tmp_path: Path) -> None:
    finished = await run_gateway("chat", "-c", str(scripted_config(tmp_path)), "--agent", "helper", cwd=tmp_path,
                                 stdin="Please restart the website.\nmaybe\n\nYES\n")
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.count("please answer y (approve) or n (deny)") == 2
    assert "helper> Approved by" in finished.stdout and "website restarted" in finished.stdout


async def test_no_is_a_deny_and_the_end_of_input_decides_nothing(tmp_path: Path) -> None:
    denied = await run_gateway("chat", "-c", str(scripted_config(tmp_path)), "--agent", "helper", cwd=tmp_path,
                               stdin="Please restart the website.\nno\n")
    assert "helper> Denied by" in denied.stdout
    ended = await run_gateway("chat", "-c", str(scripted_config(tmp_path)), "--agent", "helper", cwd=tmp_path,
                              stdin="Please restart the website.\n")
    assert ended.returncode == 0, ended.stderr
    assert "no answer: the call was neither approved nor denied, and the chat ends" in ended.stdout
    assert "Denied by" not in ended.stdout and "website restarted" not in ended.stdout


async def test_the_chat_prints_no_first_run_banner(tmp_path: Path) -> None:
    """pydantic-ai shows its banner on a first run to a terminal or a coding agent (`AI_AGENT`), never under pytest
    or CI: the process runs here as it would for a person, with neither variable and a coding agent declared."""
    env = {key: value for key, value in gateway_env({"AI_AGENT": "1"}).items() if key not in ("PYTEST_VERSION", "CI")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "chat", "-c", str(scripted_config(tmp_path)), "--agent", "smoke",
        cwd=tmp_path, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    async with asyncio.timeout(120):
        out, err = await process.communicate(b"hello\n")
    assert process.returncode == 0, err.decode()
    assert "smoke> success (no tool calls)" in out.decode()
    assert "Logfire" not in err.decode() + out.decode() and "observability" not in err.decode() + out.decode()
