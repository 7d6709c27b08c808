"""kill -9 of `gateway serve` with 8 turns in flight, right after their first signs appear, then a restart on the same
SQLite file: every turn is answered once, and no "…" (nor anything else) is left above an answer. The seconds from
the kill to the restarted process being ready and to each answer are printed (run with -s)."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from tests.support.cli_process import gateway_env, until_serving
from tests.support.fakes.chat_completions import (
    ChatCompletionsServer,
    last_user_text,
    open_stream,
    stream_answer,
    write_chunk,
)
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import free_port
from tests.support.slack_harness import SlackBot

TURNS = 8
GIVE_UP_AFTER = 90.0
"""Seconds from the kill after which the test stops waiting: a bound on the wait, not the figure (printed, not
asserted: a timed assertion fails on a machine busy enough to be slow and says nothing about correctness)."""
TOKEN = "565656:crash-mid-turn-token"


class HeldModel(ChatCompletionsServer):
    """Until `release`, every request is held open: silent, or after a first streamed chunk (`first_text`); after
    it, each request streams `echo: <what the person said>`."""

    def __init__(self, *, first_text: bool) -> None:
        super().__init__()
        self.held: list[str] = []
        self.all_held = asyncio.Event()
        """Set once TURNS requests are held."""
        self._first_text = first_text
        self._released = asyncio.Event()

    def stop(self) -> None:
        self.release()

    def release(self) -> None:
        self._released.set()

    async def complete(self, request: web.Request) -> web.StreamResponse:
        said = last_user_text(await request.json())
        if self._released.is_set():
            return await stream_answer(request, [{"role": "assistant", "content": f"echo: {said}"}], "stop")
        response = await open_stream(request)
        self.held.append(said)
        if len(self.held) == TURNS:
            self.all_held.set()
        if self._first_text:
            await write_chunk(response, {"role": "assistant", "content": f"thinking about {said}"})
        await self._released.wait()  # the process that asked is killed meanwhile
        return response


Connected = Callable[[], Awaitable[None]]
"""Returns once a `gateway serve` started after the last call has connected to the platform (a platform event)."""


def connections(calls: Callable[[], list[Any]], method: str, wait_for: Callable[..., Awaitable[None]]) -> Connected:
    """A `Connected` for a platform whose transport starts with `method` (getUpdates, apps.connections.open)."""
    seen = 0

    async def connected() -> None:
        nonlocal seen
        before = seen
        await wait_for(lambda: sum(c.method == method for c in calls()) > before, timeout=60)
        seen = sum(c.method == method for c in calls())
    return connected


@asynccontextmanager
async def serving(config: Path, env: dict[str, str], port: int,
                  connected: Connected) -> AsyncIterator[asyncio.subprocess.Process]:
    """A `gateway serve` process, once it connected to the platform and its readiness probe answers 200."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "serve", "-c", str(config), cwd=config.parent, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await connected()
        await until_serving(port)  # moments after the transport: its HTTP server may still bind
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def write_config(tmp_path: Path, model: HeldModel, bot: dict[str, Any], port: int) -> Path:
    config = tmp_path / "gateway.yaml"
    config.write_text(yaml.safe_dump({
        "models": {"held": {"provider": "openai-chat", "base_url": model.url, "model": "held"}},
        "agents": [{"name": "assistant", "model": "held", "instructions": "Be brief."}],
        "bots": [bot],
        "server": {"host": "127.0.0.1", "port": port},
    }))
    return config


async def crash_and_restart(tmp_path: Path, model: HeldModel, bot: dict[str, Any], secrets: dict[str, str], *,
                            connected: Connected, say: Callable[[int], Any], signs_shown: Callable[[], bool],
                            wait_for: Callable[..., Any], answers: Callable[[], dict[int, list[str]]]) -> None:
    """Start, say TURNS messages, kill -9 once `signs_shown()`, restart on the same database, wait until every
    turn's answer is in its chat; print the figures."""
    port = free_port()
    config = write_config(tmp_path, model, bot, port)
    env = gateway_env({"DATABASE_URL": f"sqlite:///{tmp_path / 'gateway.db'}", **secrets})
    async with serving(config, env, port, connected) as first:
        for turn in range(TURNS):
            await say(turn)
        async with asyncio.timeout(60):
            await model.all_held.wait()
        await wait_for(signs_shown, timeout=60)
        first.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        await first.wait()
    model.release()
    answered: dict[int, float] = {}

    def note_answers() -> bool:
        for turn, texts in answers().items():
            if f"echo: turn {turn}" in texts:
                answered.setdefault(turn, time.monotonic() - killed)
        return len(answered) == TURNS

    async with serving(config, env, port, connected):
        ready = time.monotonic() - killed
        await wait_for(note_answers, timeout=GIVE_UP_AFTER)
    print(f"\n{bot['platform']}: {TURNS} turns killed mid-turn; restarted process ready {ready:.1f} s after the kill, "
          f"the turns answered {min(answered.values()):.1f} to {max(answered.values()):.1f} s after it")


@pytest.mark.parametrize("first_text", [False, True], ids=["slow-model", "first-text-posted"])
async def test_telegram_turns_killed_mid_turn_are_answered_once_with_nothing_left_above(
        telegram: FakeTelegram, tmp_path: Path, first_text: bool) -> None:
    telegram.add_bot(TOKEN, username="crash_bot")
    people = [telegram.add_user(2000 + turn, f"Person{turn}") for turn in range(TURNS)]
    chats = [telegram.private_chat(person) for person in people]

    def typing_in(chat: dict[str, Any]) -> bool:
        return any(c.method == "sendChatAction" and str(c.params.get("chat_id")) == str(chat["id"])
                   for c in telegram.calls)

    def signs_shown() -> bool:  # typing everywhere, and where the model said something, that text drafted
        return all(typing_in(chat) and (not first_text or telegram.drafts.current(chat["id"])) for chat in chats)

    def answers() -> dict[int, list[str]]:
        return {turn: [m["text"] for m in telegram.bot_messages(chat["id"])] for turn, chat in enumerate(chats)}

    async def say(turn: int) -> None:
        await telegram.user_says(TOKEN, chats[turn], people[turn], f"turn {turn}")

    bot = {"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "api_base_url": telegram.url,
           "agent": "assistant"}
    async with HeldModel(first_text=first_text) as model:
        await crash_and_restart(tmp_path, model, bot, {"TG_TOKEN": TOKEN}, say=say, signs_shown=signs_shown,
                                connected=connections(lambda: telegram.calls, "getUpdates", telegram.wait_for),
                                wait_for=telegram.wait_for, answers=answers)
    # Nothing is posted in a private chat before the answer: what the model said showed as a draft, which is no
    # message, so nothing can be left above an answer.
    assert answers() == {turn: [f"echo: turn {turn}"] for turn in range(TURNS)}
    assert not any(c.method == "sendMessage" and c.params.get("text") == "…" for c in telegram.calls)


async def test_slack_turns_killed_right_after_their_placeholders_are_answered_in_them(
        slack: FakeSlack, tmp_path: Path) -> None:
    bot = SlackBot(app=slack.add_app("helper"), name="sl")
    people = [slack.add_user(f"person{turn}", real_name=f"Person {turn}") for turn in range(TURNS)]
    rooms = [slack.open_dm(person, bot.app) for person in people]

    def answers() -> dict[int, list[str]]:
        return {turn: slack.texts(room, by=bot.app) for turn, room in enumerate(rooms)}

    def signs_shown() -> bool:
        return all(texts == ["…"] for texts in answers().values())

    async def say(turn: int) -> None:
        await slack.user_says(rooms[turn], people[turn], f"turn {turn}")

    async with HeldModel(first_text=False) as model:
        await crash_and_restart(tmp_path, model, bot.spec(slack), bot.secrets(), say=say, signs_shown=signs_shown,
                                connected=connections(lambda: slack.calls, "apps.connections.open", slack.wait_for),
                                wait_for=slack.wait_for, answers=answers)
    assert answers() == {turn: [f"echo: turn {turn}"] for turn in range(TURNS)}
