"""Where one plain Telegram DM runs in the product: the files and folders whose code it calls, from the person's
message to the finished inbox item (README's "How a message travels" lists them).

A profile hook records every call into the product's packages (the local Telegram server, which plays the
platform, and the tests are not product). The gateway's sweeps and its HTTP server run on their own clock whether
a message comes or not, so their tasks are left out; the finished item is looked for with the standard library's
sqlite3, so the looking is not counted either.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import QUIET, TelegramBot, ask, running_gateway
from tests.support.scripted import echoes

ROOT = str(Path(__file__).resolve().parents[2]) + "/"
PRODUCT = ("adapters/", "capabilities/", "gateway/", "storage/")
MAX_FILES = 20
"""A ratchet: what a DM runs today (37 before the capabilities bound their services and the router became steps);
it only goes down. Each of the 20 is on the way of every message: the platform's adapter and markup, the shared
adapter kit (wire, keys, Markdown), the intake, inbox, worker, router and the three steps a plain message takes (rate
limit, command, answer), the turn's records, the live reply, the runtime, and the database, cache and metrics. A step
the deployment binds nothing for (a delegate's open question) is left out at start; one with nothing to do for the
binding (open access, no budget) is skipped without a call."""
MAX_FOLDERS = 6
CAPABILITY_PLUMBING = ("gateway/pipeline/outbox.py", "storage/conversation_state.py", "gateway/agents/tool_policy.py",
                       "gateway/agents/mcp_servers.py")
"""What a run builds only for the capabilities and MCP servers its agent binds."""


class Recorder:
    """The product files whose code runs while `on`, as keys in the order first called. Hooked before the gateway
    starts, so that the threads it starts (the database's) are profiled too."""

    def __init__(self) -> None:
        self.on = False
        self.seen: dict[str, None] = {}


@contextmanager
def hooked() -> Iterator[Recorder]:
    recorder = Recorder()
    seen = recorder.seen

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call" or not recorder.on:
            return
        path = frame.f_code.co_filename.removeprefix(ROOT)
        if path.startswith(PRODUCT) and path not in seen and not in_sweep():
            seen[path] = None

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield recorder
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]  # None removes the hook, as the docs say


def in_sweep() -> bool:
    try:
        task = asyncio.current_task()
    except RuntimeError:  # the database's own thread: the turn's work
        return False
    return task is not None and task.get_name().startswith(("sweep", "server:"))


async def until_done(path: Path, count: int) -> None:
    """Until `count` inbox items are done, read with sqlite3 (nothing of the product runs for it)."""
    async with asyncio.timeout(30):
        while True:
            with sqlite3.connect(path) as connection:
                done = connection.execute("SELECT count(*) FROM inbox WHERE status = 'done'").fetchone()[0]
            if done >= count:
                return
            await asyncio.sleep(0.02)


async def test_a_plain_dm_runs_in_few_files_and_folders(telegram: FakeTelegram, tmp_path: Path) -> None:
    database = tmp_path / "gateway.db"
    bot = TelegramBot().register(telegram)
    user = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(user)
    with hooked() as recorder:
        async with running_gateway(telegram, [bot], database_url=f"sqlite+aiosqlite:///{database}", redis_url=None,
                                   model=echoes(), tuning=QUIET):
            assert await ask(telegram, bot, chat, user, "warm up") == "echo: warm up"
            await until_done(database, 1)
            recorder.on = True
            assert await ask(telegram, bot, chat, user, "hello") == "echo: hello"
            await until_done(database, 2)
            recorder.on = False
    ran = list(recorder.seen)
    folders = list(dict.fromkeys(str(Path(path).parent) for path in ran))
    print(f"\n{len(ran)} files in {len(folders)} folders:\n" + "\n".join(ran))
    assert len(ran) <= MAX_FILES and len(folders) <= MAX_FOLDERS, (len(ran), folders, ran)
    plumbing = [path for path in ran if path.startswith("capabilities/") or path in CAPABILITY_PLUMBING]
    assert not plumbing, f"an agent that binds no capability paid for {plumbing}"
