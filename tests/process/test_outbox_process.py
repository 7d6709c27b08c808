"""kill -9 of a `gateway serve` process while it uploads a chart to Slack, then a restart on the same database: the
chart ends up in the chat, once when the kill landed before Slack had the file and at most twice (the duplicate the
README states) when it landed after Slack shared it and before the gateway wrote that down; the answer, said by
whichever attempt, says the chart is on its way only of a chart that was stored, and it arrives."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from sqlalchemy import select

from storage.db import Database
from storage.models import OutboxFileRow
from tests.support.cli_process import gateway_env, until_serving
from tests.support.fakes.chat_completions import ChatCompletionsServer, stream_answer
from tests.support.fakes.slack import FakeSlack, SlackApp
from tests.support.harness import free_port

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)

CHART = {"chart_type": "bar", "title": "Sales by month", "x_values": ["Jan", "Feb", "Mar"],
         "series": [{"key": "sales", "values": [3, 5, 4]}]}
GIVE_UP_AFTER = 90.0
"""Seconds after the restart the test stops waiting for the file: a bound, not the figure (a worker lease and a
file claim, 10 s each, then one sweep)."""


class ChartingModel(ChatCompletionsServer):
    """Asked for a chart, it calls `create_chart`; given the tool's answer, it answers 'Done: ' and that answer word
    for word, so the chat shows what the tool told the model."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    async def complete(self, request: web.Request) -> web.StreamResponse:
        messages = (await request.json())["messages"]
        self.asked += 1
        if messages[-1]["role"] == "tool":
            return await stream_answer(request, [{"role": "assistant", "content": f"Done: {messages[-1]['content']}"}],
                                       "stop")
        call = {"name": "create_chart", "arguments": json.dumps(CHART)}
        return await stream_answer(request, [{"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": call}]}], "tool_calls")


@asynccontextmanager
async def serving(slack: FakeSlack, app: SlackApp, config: Path, env: dict[str, str],
                  port: int) -> AsyncIterator[asyncio.subprocess.Process]:
    """A `gateway serve` process, once its Socket Mode connection is up and its readiness probe answers 200."""
    connected = sum(c.method == "apps.connections.open" for c in slack.calls)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "serve", "-c", str(config), cwd=config.parent, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await slack.wait_for(lambda: sum(c.method == "apps.connections.open" for c in slack.calls) > connected
                             and bool(app.sockets), timeout=30)
        await until_serving(port)
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def stored(database_url: str) -> list[OutboxFileRow]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(OutboxFileRow))).scalars())
    finally:
        await db.close()


@pytest.mark.parametrize(("kill_during", "expected"), [("upload", 1), ("complete", 2)])
async def test_a_chart_cut_off_by_kill_9_mid_upload_reaches_the_chat_after_a_restart(
        slack: FakeSlack, database_url: str, tmp_path: Path, kill_during: str, expected: int) -> None:
    app = slack.add_app("helper")
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, app)
    port = free_port()

    def files() -> list[dict[str, Any]]:
        return [f for m in slack.messages(dm) if m.get("user") == app.bot_user_id for f in m.get("files") or []]

    def answers() -> list[str]:
        return [t for t in slack.texts(dm, by=app) if t]

    async with ChartingModel() as model, AsyncExitStack() as stack:
        config = tmp_path / "gateway.yaml"
        config.write_text(yaml.safe_dump({
            "models": {"charting": {"provider": "openai-chat", "base_url": model.url, "model": "charting"}},
            "agents": [{"name": "helper", "model": "charting", "instructions": "Be brief.",
                        "capabilities": [{"id": "charts"}]}],
            "bots": [{"name": "slackbot", "platform": "slack", "transport": "socket", "token": "${SL_TOKEN}",
                      "app_token": "${SL_APP_TOKEN}", "api_base_url": slack.url, "agent": "helper"}],
            "server": {"host": "127.0.0.1", "port": port},
        }))
        env = gateway_env({"SL_TOKEN": app.token, "SL_APP_TOKEN": app.app_token, "DATABASE_URL": database_url,
                           "OPENAI_API_KEY": "unused"})
        if kill_during == "upload":  # the bytes are on their way: Slack never has the file
            slack.files.hold_uploads()
        else:  # Slack shared the file; its answer never reaches the gateway
            slack.answer_never("files.completeUploadExternal")
        first = await stack.enter_async_context(serving(slack, app, config, env, port))
        await slack.user_says(dm, alice, "chart our sales")
        if kill_during == "upload":
            await slack.wait_for(lambda: slack.files.holding == 1, timeout=30)
        else:
            await slack.wait_for(lambda: len(files()) == 1, timeout=30)
        first.send_signal(signal.SIGKILL)
        await first.wait()
        assert [row.status for row in await stored(database_url)] == ["posting"]
        assert len(files()) == expected - 1
        assert all("on its way" in a for a in answers() if a.startswith("Done:")), "said only of a stored file"
        restarted = time.monotonic()
        await stack.enter_async_context(serving(slack, app, config, env, port))
        await slack.wait_for(lambda: len(files()) >= expected and any(a.startswith("Done:") for a in answers()),
                             timeout=GIVE_UP_AFTER, recheck=1.0)
        posted = time.monotonic() - restarted
        async with asyncio.timeout(GIVE_UP_AFTER):
            while [row.status for row in await stored(database_url)] != ["posted"]:  # noqa: ASYNC110
                await asyncio.sleep(0.2)  # the database has no change to wait on
    print(f"\nkill -9 during the {kill_during}: the chart was in the chat {posted:.1f} s after the restart")
    assert len(files()) == expected, "once, or with the one duplicate README states"
    assert {f["name"] for f in files()} == {"sales-by-month.png"}
    [answer] = answers()  # the retry answered in the first attempt's placeholder
    assert answer.startswith("Done: The bar chart 'Sales by month'") and "is on its way" in answer
