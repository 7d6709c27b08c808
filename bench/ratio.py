"""The gateway against its floors, interleaved: the issue-17 table with ratios, measured from outside.

    .venv/bin/python -m bench.ratio [--repetitions 3] [--messages 300] [--chats 20] [--rate R]
                                    [--variants echo,llm,sqlite,postgresql] [--idle-bots N]

Each run starts a fresh process for one variant — the echo floor and the LLM floor (`bench/floor_bots.py`), or
the gateway on SQLite or PostgreSQL (`bench/gateway_bot.py`) — against a fresh local Telegram server
(`gateway/sandbox/telegram.py`) in this process, and every bot answers with the same scripted streaming model
(`bench/models.py`). Variants run A B C D, A B C D, … so a change of the machine's load hits all of them alike.

Per run: one warm-up message in every chat (not counted), idle CPU over `--idle` seconds, then `--messages`
messages over `--chats` chats (half private, half groups where the bot is @mentioned): closed loop by default
(every chat waits for its answer, so `--chats` are in flight), or open loop at `--rate` messages/s.
Measured: CPU of the bot's process tree (`/proc/<pid>/stat` utime+stime, children included) per answered
message, answered/s, time from the user's message to the first visible sign (typing or a post), the first post
and the final text, the Telegram offset ack (the first getUpdates whose offset passes the update), peak RSS
(VmHWM), and exactly-once (each message has exactly one message showing its answer, no "…" left).
PostgreSQL's own server processes are not in the bot's tree; their CPU is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._common import DEFAULT_POSTGRES, machine, percentile, postgres_reachable, postgres_schema
from gateway.sandbox.telegram import TelegramSandbox

ROOT = Path(__file__).resolve().parent.parent
USERNAME = "bench_helper_bot"
TICK = os.sysconf("SC_CLK_TCK")
VARIANTS = {"echo": "echo floor", "llm": "LLM floor", "base-sqlite": "baseline gateway, SQLite",
            "sqlite": "gateway, SQLite", "postgresql": "gateway, PostgreSQL"}
BASELINE = os.environ.get("BENCH_BASELINE", "")
"""`base-sqlite` runs the gateway package found here (say `git archive <commit> | tar -x -C DIR`) with this bench."""


def tree(pid: int) -> list[int]:
    """The process and its descendants."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
    return found


def cpu_seconds(pid: int) -> float:
    """utime + stime of the tree, and of its reaped children."""
    total = 0
    for member in tree(pid):
        with contextlib.suppress(OSError, IndexError):
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(fields[i]) for i in (11, 12, 13, 14))
    return total / TICK


def peak_rss_mib(pid: int) -> float:
    total = 0
    for member in tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
    return total / 1024


def rss_mib(pid: int) -> float:
    total = 0
    for member in tree(pid):
        with contextlib.suppress(OSError):
            total += int(Path(f"/proc/{member}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return total / 2**20


@dataclass(slots=True)
class Pending:
    tag: str
    sent: float
    first_sign: float | None = None
    first_post: float | None = None
    done: asyncio.Future[float] | None = None


class Watch(TelegramSandbox):
    """The sandbox, noting per message when its chat first showed a sign, a post, its final text, and its ack."""

    def __init__(self) -> None:
        super().__init__()
        self._seen = 0
        self.in_flight: dict[int, deque[Pending]] = {}
        self.finals: dict[str, Pending] = {}
        self.unacked: deque[tuple[int, float]] = deque()
        self.acks: list[float] = []
        self.signs: list[float] = []
        self.posts: list[float] = []
        self.final_latencies: list[float] = []
        self.recording = False

    async def _notify(self) -> None:
        calls = self.calls
        for call in calls[self._seen:]:
            self._note(call.method, call.params, call.at)
        self._seen = len(calls)
        await super()._notify()

    def _note(self, method: str, params: dict[str, Any], at: float) -> None:
        if method == "getUpdates":
            offset = int(params.get("offset") or 0)
            while self.unacked and self.unacked[0][0] < offset:
                _, sent = self.unacked.popleft()
                if self.recording:
                    self.acks.append(at - sent)
            return
        if method not in ("sendMessage", "editMessageText", "sendChatAction"):
            return
        queue = self.in_flight.get(int(params.get("chat_id", 0)))
        if queue:
            unsigned = next((p for p in queue if p.first_sign is None), None)
            if unsigned is not None:
                unsigned.first_sign = at
            if method == "sendMessage":
                unposted = next((p for p in queue if p.first_post is None), None)
                if unposted is not None:
                    unposted.first_post = at
        text = str(params.get("text", ""))
        if method != "sendChatAction" and text.startswith("answer "):
            pending = self.finals.pop(text[len("answer "):], None)
            if pending is not None and pending.done is not None and not pending.done.done():
                pending.done.set_result(at)

    async def say(self, token: str, chat: dict[str, Any], user: dict[str, Any], tag: str) -> Pending:
        text = f"question {tag}" if chat["type"] == "private" else f"@{USERNAME} question {tag}"
        pending = Pending(tag=tag, sent=time.monotonic(), done=asyncio.get_running_loop().create_future())
        self.in_flight.setdefault(chat["id"], deque()).append(pending)
        self.finals[tag] = pending
        await self.user_says(token, chat, user, text)
        self.unacked.append((self._bots[token].next_update_id - 1, pending.sent))
        return pending

    async def settle(self, chat_id: int, pending: Pending, within: float) -> bool:
        assert pending.done is not None
        try:
            async with asyncio.timeout(within):
                final = await pending.done
        except TimeoutError:
            return False
        finally:
            with contextlib.suppress(ValueError):
                self.in_flight[chat_id].remove(pending)
        if self.recording:
            self.final_latencies.append(final - pending.sent)
            self.signs.append((pending.first_sign or final) - pending.sent)
            self.posts.append((pending.first_post or final) - pending.sent)
        return True


@dataclass(slots=True)
class Run:
    variant: str
    answered: int = 0
    sent: int = 0
    seconds: float = math.nan
    cpu: float = math.nan
    idle_ms_per_s: float = math.nan
    peak_rss: float = math.nan
    signs: list[float] = field(default_factory=list)
    posts: list[float] = field(default_factory=list)
    finals: list[float] = field(default_factory=list)
    acks: list[float] = field(default_factory=list)
    exactly_once: int = 0
    strays: int = 0

    @property
    def cpu_per_message(self) -> float:
        return self.cpu / self.answered * 1000 if self.answered else math.nan

    @property
    def rate(self) -> float:
        return self.answered / self.seconds if self.answered else 0.0


@contextlib.asynccontextmanager
async def database(variant: str, args: argparse.Namespace) -> AsyncIterator[str | None]:
    if variant in ("sqlite", "base-sqlite"):
        with tempfile.TemporaryDirectory(prefix="gateway-ratio-") as workdir:
            yield f"sqlite+aiosqlite:///{Path(workdir) / 'gateway.db'}"
    elif variant == "postgresql":
        async with postgres_schema(args.postgres_url) as url:
            yield url
    else:
        yield None


def command(variant: str, url: str, tokens: list[str], database_url: str | None) -> list[str]:
    if database_url is None:
        return [sys.executable, "-m", "bench.floor_bots", "--kind", variant, "--url", url, "--token", tokens[0],
                "--username", USERNAME]
    profile = os.environ.get("BENCH_PROFILE")  # a cProfile of the gateway's main thread, written at its exit
    prefix = ["-m", "cProfile", "-o", f"{profile}/{variant}-{uuid.uuid4().hex[:6]}.prof"] if profile else []
    return [sys.executable, *prefix, "-m", "bench.gateway_bot", "--url", url, "--token", ",".join(tokens),
            "--database-url", database_url]


async def polling(sandbox: Watch, tokens: list[str], within: float) -> None:
    wanted = set(tokens)
    await sandbox.wait_for(lambda: {c.token for c in sandbox.calls if c.method == "getUpdates"} >= wanted,
                           timeout=within)


async def spawn(argv: list[str], *, baseline: bool = False) -> asyncio.subprocess.Process:
    path = f"{BASELINE}/_bench:{BASELINE}" if baseline else str(ROOT)
    workdir = f"{BASELINE}/_bench" if baseline else ROOT  # `-m` puts the working directory first on the path
    return await asyncio.create_subprocess_exec(*argv, cwd=workdir, env={**os.environ, "PYTHONPATH": path},
                                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL)


async def stop(process: asyncio.subprocess.Process) -> None:
    process.terminate()
    try:
        async with asyncio.timeout(30):
            await process.wait()
    except TimeoutError:
        process.kill()
        await process.wait()


async def run_once(variant: str, args: argparse.Namespace) -> Run:
    run = Run(variant=variant)
    async with Watch() as sandbox, database(variant, args) as database_url:
        token = f"{700_000_000 + uuid.uuid4().int % 10**8}:{uuid.uuid4().hex}"
        sandbox.add_bot(token, username=USERNAME, first_name="Helper")
        half = args.chats // 2
        users = [sandbox.add_user(5000 + n, f"User{n}", username=f"user{n}") for n in range(args.chats)]
        chats = [sandbox.private_chat(users[n]) for n in range(args.chats - half)]
        chats += [sandbox.group(-100_000 - n, f"Team {n}", supergroup=True) for n in range(half)]
        speakers = dict(zip((c["id"] for c in chats), users, strict=True))
        process = await spawn(command(variant, sandbox.url, [token], database_url), baseline=variant == "base-sqlite")
        numbers = iter(range(1, 10**6))

        def tag() -> str:
            return f"q-{next(numbers):06d}"

        try:
            await polling(sandbox, [token], within=120)
            warm = [await sandbox.say(token, chat, speakers[chat["id"]], tag()) for chat in chats]
            await asyncio.gather(*(sandbox.settle(c["id"], p, 60) for c, p in zip(chats, warm, strict=True)))
            await asyncio.sleep(1.0)
            before = cpu_seconds(process.pid)
            await asyncio.sleep(args.idle)
            run.idle_ms_per_s = (cpu_seconds(process.pid) - before) / args.idle * 1000
            sandbox.recording = True
            tags: list[str] = []
            before, started = cpu_seconds(process.pid), time.monotonic()
            if args.rate:
                run.answered = await open_loop(sandbox, token, chats, speakers, tag, tags, args)
            else:
                run.answered = await closed_loop(sandbox, token, chats, speakers, tag, tags, args)
            run.seconds = time.monotonic() - started
            run.cpu = cpu_seconds(process.pid) - before
            run.sent = len(tags)
            await asyncio.sleep(0.5)  # late duplicates would show now
            run.peak_rss = peak_rss_mib(process.pid)
            shown = [m.get("text", "") for c in chats for m in sandbox.bot_messages(c["id"])]
            counts: dict[str, int] = {}
            for text in shown:
                if text.startswith("answer "):
                    counts[text[7:]] = counts.get(text[7:], 0) + 1
            run.exactly_once = sum(1 for t in tags if counts.get(t) == 1)
            run.strays = sum(1 for text in shown if text == "…")
        finally:
            await stop(process)
        run.signs, run.posts, run.finals, run.acks = sandbox.signs, sandbox.posts, sandbox.final_latencies, sandbox.acks
    return run


async def closed_loop(sandbox: Watch, token: str, chats: list[dict[str, Any]], speakers: dict[int, Any],
                      tag: Callable[[], str], tags: list[str], args: argparse.Namespace) -> int:
    shares = [len(range(n, args.messages, len(chats))) for n in range(len(chats))]

    async def converse(chat: dict[str, Any], count: int) -> int:
        answered = 0
        for _ in range(count):
            tags.append(current := tag())
            pending = await sandbox.say(token, chat, speakers[chat["id"]], current)
            answered += await sandbox.settle(chat["id"], pending, args.timeout)
        return answered

    return sum(await asyncio.gather(*(converse(c, n) for c, n in zip(chats, shares, strict=True))))


async def open_loop(sandbox: Watch, token: str, chats: list[dict[str, Any]], speakers: dict[int, Any],
                    tag: Callable[[], str], tags: list[str], args: argparse.Namespace) -> int:
    waits = []
    started = time.monotonic()
    for n in range(args.messages):
        await asyncio.sleep(max(0.0, started + n / args.rate - time.monotonic()))
        chat = chats[n % len(chats)]
        tags.append(current := tag())
        pending = await sandbox.say(token, chat, speakers[chat["id"]], current)
        waits.append(asyncio.create_task(sandbox.settle(chat["id"], pending, args.timeout)))
    return sum(await asyncio.gather(*waits))


@dataclass
class IdleRun:
    bots: int
    start_seconds: float
    start_cpu: float
    rss_mib: float
    idle_ms_per_s: float
    latency: float


async def idle_run(bots: int, args: argparse.Namespace) -> IdleRun:
    """`bots` idle polling bots in one gateway process: time until all poll, RSS, idle CPU, one answer."""
    async with Watch() as sandbox, database("sqlite", args) as database_url:
        tokens = [f"{800_000_000 + n}:{uuid.uuid4().hex}" for n in range(bots)]
        for n, token in enumerate(tokens):
            sandbox.add_bot(token, username=USERNAME if n == 0 else f"bot{n}")
        user = sandbox.add_user(5000, "User0", username="user0")
        chat = sandbox.private_chat(user)
        started = time.monotonic()
        # Telegram's usual 30 s long polls: what an idle bot costs in production.
        process = await spawn([*command("sqlite", sandbox.url, tokens, database_url), "--poll-timeout", "30"])
        try:
            await polling(sandbox, tokens, within=600)
            start_seconds, start_cpu = time.monotonic() - started, cpu_seconds(process.pid)
            await asyncio.sleep(2.0)
            rss, before = rss_mib(process.pid), cpu_seconds(process.pid)
            await asyncio.sleep(args.idle)
            idle = (cpu_seconds(process.pid) - before) / args.idle * 1000
            pending = await sandbox.say(tokens[0], chat, user, "q-000001")
            answered = await sandbox.settle(chat["id"], pending, 30)
            latency = (await pending.done if answered and pending.done else math.nan) - pending.sent
        finally:
            await stop(process)
    return IdleRun(bots=bots, start_seconds=start_seconds, start_cpu=start_cpu, rss_mib=rss, idle_ms_per_s=idle,
                   latency=latency)


async def idle_bots(args: argparse.Namespace) -> None:
    """What each idle bot adds: a gateway with one bot against one with `--idle-bots`, in fresh processes."""
    one, many = await idle_run(1, args), await idle_run(args.idle_bots, args)
    extra = many.bots - one.bots
    print(f"\nidle Telegram bots in one gateway (SQLite, 30 s long polls), {one.bots} bot and then {many.bots}:")
    print(f"  all polling after {one.start_seconds:.1f} s and {many.start_seconds:.1f} s "
          f"(CPU {one.start_cpu:.1f} s and {many.start_cpu:.1f} s); "
          f"RSS {one.rss_mib:.0f} and {many.rss_mib:.0f} MiB ({(many.rss_mib - one.rss_mib) / extra:.3f} MiB per "
          f"added bot); idle CPU {one.idle_ms_per_s:.1f} and {many.idle_ms_per_s:.1f} ms/s "
          f"({(many.idle_ms_per_s - one.idle_ms_per_s) / extra:.3f} ms/s per added bot); "
          f"a message answered in {one.latency * 1000:.0f} and {many.latency * 1000:.0f} ms")


def fmt(values: list[float], unit: str = "", scale: float = 1.0, digits: int = 1) -> str:
    values = [v * scale for v in values if not math.isnan(v)]
    if not values:
        return "n/a"
    middle = statistics.median(values)
    return f"{middle:,.{digits}f}{unit} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


def table(runs: dict[str, list[Run]]) -> None:
    names = list(runs)
    header = "| figure | " + " | ".join(VARIANTS[n] for n in names) + " | ratios (gateway ÷ floor) |"
    print("\n" + header)
    print("|" + "---|" * (len(names) + 2))

    def median(name: str, pick: Callable[[Run], float]) -> float:
        values = [pick(r) for r in runs.get(name, []) if not math.isnan(pick(r))]
        return statistics.median(values) if values else math.nan

    def ratios(pick: Callable[[Run], float], floor: str) -> str:
        base = median(floor, pick)
        parts = [f"{VARIANTS[g].split(', ')[1]}{' (baseline)' if g.startswith('base') else ''} "
                 f"{median(g, pick) / base:.2f}x" for g in ("base-sqlite", "sqlite", "postgresql")
                 if g in runs and base and not math.isnan(base)]
        return (f"vs {VARIANTS[floor]}: " + ", ".join(parts)) if parts and floor in runs else ""

    def row(label: str, pick: Callable[[Run], float], unit: str, floor: str | None, digits: int = 1) -> None:
        cells = [fmt([pick(r) for r in runs[n]], unit, digits=digits) for n in names]
        print(f"| {label} | " + " | ".join(cells) + f" | {ratios(pick, floor) if floor else ''} |")

    row("CPU per answered message", lambda r: r.cpu_per_message, " ms", "llm")
    row("answered messages / s", lambda r: r.rate, "", "llm")
    row("first visible sign (typing or post), p50", lambda r: percentile(r.signs, 50) * 1000, " ms", "echo", 0)
    row("first post, p50", lambda r: percentile(r.posts, 50) * 1000, " ms", "echo", 0)
    row("final text, p50", lambda r: percentile(r.finals, 50) * 1000, " ms", "llm", 0)
    row("final text, p99", lambda r: percentile(r.finals, 99) * 1000, " ms", "llm", 0)
    row("Telegram offset ack, p50", lambda r: percentile(r.acks, 50) * 1000, " ms", None, 0)
    row("Telegram offset ack, p99", lambda r: percentile(r.acks, 99) * 1000, " ms", None, 0)
    row("idle CPU", lambda r: r.idle_ms_per_s, " ms/s", None, 2)
    row("peak RSS", lambda r: r.peak_rss, " MiB", "llm", 0)
    cells = [" / ".join(f"{r.exactly_once}/{r.sent}" + (f" ({r.strays} “…” left)" if r.strays else "")
                        for r in runs[n]) for n in names]
    print("| exactly once (per repetition) | " + " | ".join(cells) + " | |")


async def main_async(args: argparse.Namespace) -> None:
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)  # a stopped bot's cut-off long poll
    if BASELINE:  # the baseline checkout gets this bench beside its own code, under _bench/bench
        target = Path(BASELINE) / "_bench" / "bench"
        target.parent.mkdir(exist_ok=True)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(ROOT / "bench", target)
    variants = args.variants.split(",")
    if "postgresql" in variants and await postgres_reachable(args.postgres_url) is None:
        print(f"PostgreSQL at {args.postgres_url} does not answer: left out")
        variants.remove("postgresql")
    shape = f"open loop at {args.rate:g} msg/s" if args.rate else f"closed loop, {args.chats} in flight"
    print(f"ratio · {machine()}")
    print(f"{args.messages} messages over {args.chats} chats (half group mentions), {shape}; "
          f"{args.repetitions} interleaved repetitions of {', '.join(variants)}")
    runs: dict[str, list[Run]] = {v: [] for v in variants}
    for repetition in range(1, args.repetitions + 1):
        for variant in variants:
            run = await run_once(variant, args)
            runs[variant].append(run)
            print(f"  rep {repetition} {variant:>10}: {run.answered}/{run.sent} answered in {run.seconds:.1f} s, "
                  f"{run.cpu_per_message:.1f} ms CPU/msg, load {os.getloadavg()[0]:.1f}", flush=True)
    table(runs)
    if args.idle_bots:
        await idle_bots(args)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.ratio", description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--rate", type=float, default=0.0, help="open loop at this many messages/s (0: closed)")
    parser.add_argument("--idle", type=float, default=3.0, help="seconds of idle CPU measured per run")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for one answer")
    parser.add_argument("--variants", default="echo,llm,sqlite,postgresql")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES)
    parser.add_argument("--idle-bots", type=int, default=0, help="also start N idle bots in one gateway")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main_async(parse_args()))
