"""A bubblewrap workspace sees only itself: escape attempts through `execute` in real Telegram chats find nothing.

The layout is the worst an operator could choose: the workspaces' directory inside the gateway's working
directory, beside the SQLite database, gateway.yaml, a secrets file and a log, and the gateway's environment
holding a secret. Bob's turn leaves a note in his workspace and his words in the database; Alice's turns then
try every way out the shell offers, and neither the tool results the model saw nor what reached her chat
holds any of it.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from tests.support.fakes.sandboxd import bubblewrap_unusable
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import stepped

pytestmark = pytest.mark.skipif(bubblewrap_unusable() is not None, reason=str(bubblewrap_unusable()))

BOB_NOTE = "bob-note-4f1c9a"
BOB_WORDS = "bob-dm-7d2e5b"
CONFIG = "config-marker-91ab3c"
SECRET = "secrets-file-marker-c0ffee"
LOG = "log-marker-55aa10"
CANARY = "canary-env-8e3f77"
MARKERS = (BOB_NOTE, BOB_WORDS, CONFIG, SECRET, LOG, CANARY)
GREP = "grep -rahoE '[a-z-]+-(marker|note|dm|env)-[0-9a-f]{6}'"
"""Prints any marker in the files it is pointed at, binary ones (the database) included."""


@dataclass
class Attacker:
    """A model that makes the calls the turn's message names and keeps every tool result it was shown."""

    scripts: dict[str, list[tuple[str, dict[str, object]]]]
    seen: list[str] = field(default_factory=list)

    def model(self) -> FunctionModel:
        def step(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
            started = max(i for i, m in enumerate(messages) if isinstance(m, ModelRequest)
                          and any(isinstance(p, UserPromptPart) for p in m.parts))
            prompt = " ".join(str(p.content) for p in messages[started].parts if isinstance(p, UserPromptPart))
            results = [str(p.content) for m in messages[started + 1:] if isinstance(m, ModelRequest)
                       for p in m.parts if isinstance(p, ToolReturnPart)]
            calls = next(calls for name, calls in self.scripts.items() if name in prompt)
            if len(results) < len(calls):
                name, args = calls[len(results)]
                return name, args, f"c{started}-{len(results)}"
            self.seen.extend(results)
            return "ran:\n" + "\n".join(results)
        return stepped(step)


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    home: Path
    """The gateway's working directory: database, config, secrets file, log, and the workspaces' directory."""
    workspaces: Path

    def bob(self) -> Path:
        """Bob's workspace directory, the one holding his note (its name is what an attacker would guess)."""
        return next(d for d in self.workspaces.iterdir() if (d / "notes.txt").exists())


@pytest.fixture
def layout(monkeypatch: pytest.MonkeyPatch) -> Iterator[Layout]:
    """Under `/var/tmp`, not pytest's `/tmp`: a sandbox's private `/tmp` would hide the layout whatever the seal."""
    home = Path(tempfile.mkdtemp(prefix="gateway-", dir="/var/tmp"))
    (home / "gateway.yaml").write_text(f"# {CONFIG}\n")
    (home / "secrets.env").write_text(f"TOKEN={SECRET}\n")
    (home / "gateway.log").write_text(f"{LOG}\n")
    monkeypatch.chdir(home)
    monkeypatch.setenv("GATEWAY_CANARY", CANARY)
    yield Layout(home=home, workspaces=home / "workspaces")
    shutil.rmtree(home)


@asynccontextmanager
async def chats(telegram: FakeTelegram, layout: Layout,
                attacker: Attacker) -> AsyncIterator[Callable[[str, str], Any]]:
    """A gateway with a bubblewrap workspace per chat and no approval on `execute`; yields `say(who, text)`,
    which sends the text in that person's private chat and waits for the answer."""
    bot = TelegramBot().register(telegram)
    people = {name: telegram.add_user(uid, name) for name, uid in (("Alice", 1001), ("Bob", 1002))}
    rooms = {name: telegram.private_chat(user) for name, user in people.items()}
    sandbox = {"id": "sandbox", "tool_approval": {"execute": "never"},
               "config": {"backend": "service", "session_scope": "conversation"}}
    local = {"kind": "bubblewrap", "directory": str(layout.workspaces)}
    database = f"sqlite+aiosqlite:///{layout.home / 'gateway.db'}"

    async def say(who: str, text: str) -> None:
        chat = rooms[who]
        before = len(telegram.bot_messages(chat["id"]))
        await telegram.user_says(bot.token, chat, people[who], text)
        # A bound for a loaded machine: each call of the turn starts a sandbox of its own.
        await telegram.wait_for(lambda: any(m.get("text", "").startswith("ran:")
                                            for m in telegram.bot_messages(chat["id"])[before:]), timeout=60)

    async with running_gateway(telegram, [bot], database_url=database, redis_url=None, model=attacker.model(),
                               capabilities=[sandbox], top={"sandboxes": {"local": local}}):
        await say("Bob", f"bob writes {BOB_WORDS}")
        yield say


def leaked(attacker: Attacker, telegram: FakeTelegram) -> list[str]:
    """Every marker found in what the model was shown or in anything the bot posted."""
    posted = [str(m.get("text", "")) for m in telegram.bot_messages(1001)]
    posted += [telegram.file_content(m).decode(errors="replace") for m in telegram.bot_messages(1001)
               if "document" in m or "photo" in m]
    seen = "\n".join([*attacker.seen, *posted])
    return [marker for marker in MARKERS if marker in seen]


def run(command: str) -> tuple[str, dict[str, object]]:
    """`execute` of `command` encoded, as an attacker would send it: the tool's path check (defence in depth,
    not the boundary) sees no path, and only the sandbox stands between the command and the host."""
    encoded = base64.b64encode(command.encode()).decode()
    return "execute", {"command": f"echo {encoded} | base64 -d | sh"}


def bob_writes() -> list[tuple[str, dict[str, object]]]:
    return [run(f"echo {BOB_NOTE} > notes.txt && echo written")]


async def test_parent_directories_and_a_guessed_neighbour_hold_nothing(telegram: FakeTelegram,
                                                                       layout: Layout) -> None:
    attacker = Attacker({"bob writes": bob_writes()})
    async with chats(telegram, layout, attacker) as say:
        bob = layout.bob()
        attacker.scripts["climb"] = [
            run(f"cd ..; ls -a; cat */notes.txt; cd ..; ls -a; cat gateway.yaml secrets.env gateway.log; "
                f"{GREP} gateway.db* 2>&1; cd ../../..; ls -a; echo climbed"),
            run(f"cat {layout.workspaces}/*/notes.txt {layout.home}/gateway.yaml {layout.home}/secrets.env "
                f"{layout.home}/gateway.log; {GREP} {layout.home}/gateway.db* 2>&1; echo absolute"),
            run(f"cat /workspace/../{bob.name}/notes.txt {bob}/notes.txt 2>&1; ls -a /; echo guessed"),
            ("read_file", {"path": f"{bob}/notes.txt"}),
            ("read_file", {"path": f"../{bob.name}/notes.txt"}),
        ]
        await say("Alice", "climb")
    assert (bob / "notes.txt").read_text().strip() == BOB_NOTE, "Bob's note is there to be found"
    assert any("climbed" in seen for seen in attacker.seen), attacker.seen
    assert leaked(attacker, telegram) == []


async def test_no_process_or_environment_of_the_gateway_is_visible(telegram: FakeTelegram, layout: Layout) -> None:
    attacker = Attacker({"bob writes": bob_writes(), "procs": [
        run("env; cat /proc/self/environ; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done; "
            f"tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/{os.getpid()}/environ /proc/{os.getppid()}/cmdline; "
            "ls -d /proc/[0-9]* | wc -l; echo procs-listed"),
    ]})
    async with chats(telegram, layout, attacker) as say:
        await say("Alice", "procs")
    [shown] = [seen for seen in attacker.seen if "procs-listed" in seen]
    assert str(layout.home) not in shown, "the command's pid 1 is the command, not the launcher with its paths"
    assert leaked(attacker, telegram) == []


async def test_no_socket_reaches_a_listener_on_this_host(telegram: FakeTelegram, layout: Layout) -> None:
    reached = asyncio.Event()

    async def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.set()
        writer.close()

    tcp = await asyncio.start_server(accept, "127.0.0.1", 0)
    unix = await asyncio.start_unix_server(accept, str(layout.home / "gateway.sock"))
    port = tcp.sockets[0].getsockname()[1]
    connect = ("import socket\n"
               "for family, address in ((socket.AF_INET, ('127.0.0.1', {port})), "
               "(socket.AF_UNIX, '{path}')):\n"
               "    try:\n"
               "        socket.socket(family).connect(address); print('connected')\n"
               "    except OSError as error: print('refused', error)\n")
    attacker = Attacker({"bob writes": bob_writes(), "dial": [
        run(f"python3 -c \"{connect.format(port=port, path=layout.home / 'gateway.sock')}\""),
    ]})
    async with tcp, unix, chats(telegram, layout, attacker) as say:
        await say("Alice", "dial")
    assert any("refused" in seen for seen in attacker.seen) and not any("connected" in s for s in attacker.seen)
    assert not reached.is_set()


async def test_a_planted_symlink_leads_nowhere_outside(telegram: FakeTelegram, layout: Layout) -> None:
    attacker = Attacker({"bob writes": bob_writes()})
    async with chats(telegram, layout, attacker) as say:
        bob = layout.bob()
        attacker.scripts["plant"] = [
            run(f"ln -s {layout.home} home; ln -s {bob} bob; ln -s / root; mkdir -p output; "
                f"ln -s {layout.home}/gateway.yaml output/config.txt; ln -s {bob}/notes.txt output/notes.txt; "
                "cat home/gateway.yaml bob/notes.txt home/gateway.log; ls root/; echo planted"),
            ("read_file", {"path": "bob/notes.txt"}),
            ("read_file", {"path": "home/gateway.yaml"}),
            ("read_file", {"path": "output/notes.txt"}),
        ]
        await say("Alice", "plant")
    assert any("planted" in seen for seen in attacker.seen)
    assert leaked(attacker, telegram) == []

