"""The gateway against its floors, interleaved: the issue-17 table with ratios, measured from outside.

    .venv/bin/python -m bench.ratio [--platform telegram|slack|mattermost] [--repetitions 3] [--messages 300]
                                    [--chats 20] [--rate R] [--variants echo,llm,sqlite,postgresql]
                                    [--idle-bots N] [--idle-slack N] [--idle-mattermost N]

Each run starts a fresh process for one variant — the echo floor and the LLM floor (`bench/floor_bots.py`), or
the gateway on SQLite or PostgreSQL (`bench/gateway_bot.py`) — against a fresh local server of `--platform`
(`local_platforms/`, watched by `bench/watch_*.py`) in this process, and every bot answers with the same
scripted streaming model (`bench/models.py`). Variants run A B C D, A B C D, … so a change of the machine's
load hits all of them alike. A platform without floors of its own runs the Telegram floors, labelled so.

Per run: one warm-up message in every chat (not counted), idle CPU over `--idle` seconds, then `--messages`
messages over `--chats` chats (half private, half groups where the bot is @mentioned): closed loop by default
(every chat waits for its answer, so `--chats` are in flight), or open loop at `--rate` messages/s.
Measured: CPU of the bot's process tree (`/proc/<pid>/stat` utime+stime, children included) per answered
message, answered/s, time from the user's message to the first visible sign (typing or a post), the first post
and the final text, the platform's ack (Telegram: the first getUpdates whose offset passes the update; Slack:
the Socket Mode envelope's acknowledgement; Mattermost has none), peak RSS (VmHWM), and exactly-once (each
message has exactly one message showing its answer, no "…" left). PostgreSQL's own server processes are not in
the bot's tree; their CPU is not counted. `--idle-*` adds the idle-bots comparison (`bench/idle.py`).
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
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench._common import DEFAULT_POSTGRES, machine, percentile, postgres_reachable, postgres_schema
from bench.floor_bots import FLOOR_PLATFORMS
from bench.idle import idle_bots
from bench.process import BASELINE, ROOT, cpu_seconds, peak_rss_mib, spawn, stop
from bench.watch import ANSWER, PLACEHOLDER, BenchBot, BenchChat, Watch
from bench.watch_mattermost import MattermostWatch
from bench.watch_slack import SlackWatch
from bench.watch_telegram import TelegramWatch
from storage.db import Database
from storage.migrate import upgrade

WATCHES: dict[str, Callable[[], Watch]] = {"telegram": TelegramWatch, "slack": SlackWatch,
                                           "mattermost": MattermostWatch}
VARIANTS = {"echo": "echo floor", "llm": "LLM floor", "durable": "durable LLM floor",
            "base-sqlite": "baseline gateway, SQLite", "sqlite": "gateway, SQLite", "postgresql": "gateway, PostgreSQL"}
FLOORS = ("echo", "llm", "durable")
GATEWAYS = ("base-sqlite", "sqlite", "postgresql")
TARGETS: tuple[tuple[str, Callable[[Run], float], float], ...] = (
    ("CPU per answered message", lambda r: r.cpu_per_message, 1.25),
    ("peak RSS", lambda r: r.peak_rss, 1.3))
"""The ceilings on gateway ÷ LLM floor: a plain turn's CPU and the process's peak memory."""
ACKS = {"telegram": "Telegram offset ack", "slack": "Slack envelope ack", "mattermost": "Mattermost ack (it has none)"}


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
    misses: list[str] = field(default_factory=list)
    """Each message not shown exactly once, with how often it is: `q-000042 (2)`."""
    calls: Counter[str] = field(default_factory=Counter)
    """The bot's API calls by method while the messages were answered."""

    @property
    def cpu_per_message(self) -> float:
        return self.cpu / self.answered * 1000 if self.answered else math.nan

    @property
    def rate(self) -> float:
        return self.answered / self.seconds if self.answered else 0.0


@contextlib.asynccontextmanager
async def database(variant: str, args: argparse.Namespace) -> AsyncIterator[str | None]:
    """A fresh database for a gateway variant, migrated beforehand as a deployment's migrate job does (the serving
    process then finds its schema current); `base-sqlite` migrates its own, with the baseline's migrations."""
    if variant == "durable":
        with tempfile.TemporaryDirectory(prefix="floor-ratio-") as workdir:
            yield str(Path(workdir) / "floor.db")
    elif variant in ("sqlite", "base-sqlite"):
        with tempfile.TemporaryDirectory(prefix="gateway-ratio-") as workdir:
            url = f"sqlite+aiosqlite:///{Path(workdir) / 'gateway.db'}"
            if variant == "sqlite":
                await migrated(url)
            yield url
    elif variant == "postgresql":
        async with postgres_schema(args.postgres_url) as url:
            await migrated(url)
            yield url
    else:
        yield None


async def migrated(url: str) -> None:
    db = Database(url)
    try:
        await upgrade(db)
    finally:
        await db.close()


def platform_of(variant: str, platform: str) -> str:
    """Where `variant` runs: the gateway on `platform`; a floor there too when it has one, else on Telegram."""
    return platform if variant not in FLOORS or platform in FLOOR_PLATFORMS else "telegram"


def command(variant: str, platform: str, url: str, bots: list[BenchBot], database_url: str | None) -> list[str]:
    tokens = ["--token", ",".join(bot.token for bot in bots)]
    if any(bot.app_token for bot in bots):
        tokens += ["--app-token", ",".join(bot.app_token for bot in bots)]
    if variant in FLOORS:
        return [sys.executable, "-m", "bench.floor_bots", "--platform", platform, "--kind", variant, "--url", url,
                *tokens, "--username", bots[0].username, *(["--database", database_url] if database_url else [])]
    assert database_url is not None
    profile = os.environ.get("BENCH_PROFILE")  # a cProfile of the gateway's main thread, written at its exit
    prefix = ["-m", "cProfile", "-o", f"{profile}/{variant}-{uuid.uuid4().hex[:6]}.prof"] if profile else []
    return [sys.executable, *prefix, "-m", "bench.gateway_bot", "--platform", platform, "--url", url, *tokens,
            "--database-url", database_url]


async def run_once(variant: str, args: argparse.Namespace) -> Run:
    run = Run(variant=variant)
    platform = platform_of(variant, args.platform)
    async with WATCHES[platform]() as watch, database(variant, args) as database_url:
        bots, chats = watch.populate(1, args.chats)
        process = await spawn(command(variant, platform, watch.url, bots, database_url),
                              baseline=variant == "base-sqlite")
        numbers = iter(range(1, 10**6))

        def tag() -> str:
            return f"q-{next(numbers):06d}"

        try:
            await watch.until_connected(bots, within=120)
            warm = [await watch.say(bots[0], chat, tag()) for chat in chats]
            await asyncio.gather(*(watch.record.settle(c.key, p, 60) for c, p in zip(chats, warm, strict=True)))
            await asyncio.sleep(1.0)
            before = cpu_seconds(process.pid)
            await asyncio.sleep(args.idle)
            run.idle_ms_per_s = (cpu_seconds(process.pid) - before) / args.idle * 1000
            watch.record.recording = True
            tags: list[str] = []
            loop = open_loop if args.rate else closed_loop
            before, started = cpu_seconds(process.pid), time.monotonic()
            run.answered = await loop(watch, bots[0], chats, tag, tags, args)
            run.seconds = time.monotonic() - started
            run.cpu = cpu_seconds(process.pid) - before
            run.sent = len(tags)
            await asyncio.sleep(0.5)  # late duplicates would show now
            run.peak_rss = peak_rss_mib(process.pid)
            tally(run, watch.shown(bots[0], chats), tags)
        finally:
            await stop(process)
        record = watch.record
        run.signs, run.posts, run.finals, run.acks = record.signs, record.posts, record.final_latencies, record.acks
        run.calls = record.calls
    return run


def tally(run: Run, shown: list[str], tags: list[str]) -> None:
    """Exactly once: how many of `tags` have exactly one message showing their answer, and which do not."""
    counts = Counter(text.removeprefix(ANSWER) for text in shown if text.startswith(ANSWER))
    run.exactly_once = sum(1 for t in tags if counts[t] == 1)
    run.misses = [f"{t} ({counts[t]})" for t in tags if counts[t] != 1]
    run.strays = sum(1 for text in shown if text == PLACEHOLDER)


async def closed_loop(watch: Watch, bot: BenchBot, chats: list[BenchChat], tag: Callable[[], str], tags: list[str],
                      args: argparse.Namespace) -> int:
    shares = [len(range(n, args.messages, len(chats))) for n in range(len(chats))]

    async def converse(chat: BenchChat, count: int) -> int:
        answered = 0
        for _ in range(count):
            tags.append(current := tag())
            pending = await watch.say(bot, chat, current)
            answered += await watch.record.settle(chat.key, pending, args.timeout)
        return answered

    return sum(await asyncio.gather(*(converse(c, n) for c, n in zip(chats, shares, strict=True))))


async def open_loop(watch: Watch, bot: BenchBot, chats: list[BenchChat], tag: Callable[[], str], tags: list[str],
                    args: argparse.Namespace) -> int:
    waits = []
    started = time.monotonic()
    for n in range(args.messages):
        await asyncio.sleep(max(0.0, started + n / args.rate - time.monotonic()))
        chat = chats[n % len(chats)]
        tags.append(current := tag())
        pending = await watch.say(bot, chat, current)
        waits.append(asyncio.create_task(watch.record.settle(chat.key, pending, args.timeout)))
    return sum(await asyncio.gather(*waits))


def fmt(values: list[float], unit: str = "", scale: float = 1.0, digits: int = 1) -> str:
    values = [v * scale for v in values if not math.isnan(v)]
    if not values:
        return "n/a"
    middle = statistics.median(values)
    return f"{middle:,.{digits}f}{unit} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


def label(variant: str, platform: str) -> str:
    elsewhere = platform_of(variant, platform)
    return VARIANTS[variant] + (f" ({elsewhere.title()})" if elsewhere != platform else "")


def median(runs: dict[str, list[Run]], name: str, pick: Callable[[Run], float]) -> float:
    values = [pick(r) for r in runs.get(name, []) if not math.isnan(pick(r))]
    return statistics.median(values) if values else math.nan


def gateway_name(variant: str) -> str:
    return VARIANTS[variant].split(", ")[1] + (" (baseline)" if variant.startswith("base") else "")


def targets(runs: dict[str, list[Run]]) -> None:
    """The two ratios the targets name, gateway ÷ LLM floor (medians), each against its ceiling."""
    if "llm" not in runs:
        return
    print("\ntargets, gateway ÷ LLM floor (medians of the repetitions):")
    for title, pick, ceiling in TARGETS:
        base = median(runs, "llm", pick)
        for gateway in (g for g in GATEWAYS if g in runs):
            ratio = median(runs, gateway, pick) / base
            print(f"  {title:<24} {gateway_name(gateway):<22} {ratio:.2f}x  (target ≤ {ceiling:.2f}x: "
                  f"{'met' if ratio <= ceiling else 'not met'})")
    if "durable" in runs:
        print("what durability alone costs, durable floor ÷ LLM floor, and the gateway ÷ durable floor:")
        for title, pick, _ in TARGETS:
            durable = median(runs, "durable", pick)
            print(f"  {title:<24} {'durable floor':<22} {durable / median(runs, 'llm', pick):.2f}x")
            for gateway in (g for g in GATEWAYS if g in runs):
                print(f"  {title:<24} {gateway_name(gateway):<22} {median(runs, gateway, pick) / durable:.2f}x")


def table(runs: dict[str, list[Run]], platform: str) -> None:
    names = list(runs)
    header = "| figure | " + " | ".join(label(n, platform) for n in names) + " | ratios (gateway ÷ floor) |"
    print("\n" + header)
    print("|" + "---|" * (len(names) + 2))

    def ratios(pick: Callable[[Run], float], floor: str) -> str:
        base = median(runs, floor, pick)
        parts = [f"{gateway_name(g)} {median(runs, g, pick) / base:.2f}x" for g in GATEWAYS
                 if g in runs and base and not math.isnan(base)]
        return (f"vs {label(floor, platform)}: " + ", ".join(parts)) if parts and floor in runs else ""

    def row(label: str, pick: Callable[[Run], float], unit: str, *floors: str, digits: int = 1) -> None:
        cells = [fmt([pick(r) for r in runs[n]], unit, digits=digits) for n in names]
        compared = "; ".join(filter(None, (ratios(pick, floor) for floor in floors)))
        print(f"| {label} | " + " | ".join(cells) + f" | {compared} |")

    row("CPU per answered message", lambda r: r.cpu_per_message, " ms", "llm", "durable")
    row("answered messages / s", lambda r: r.rate, "", "llm", "durable")
    row("first visible sign (typing or post), p50", lambda r: percentile(r.signs, 50) * 1000, " ms", "echo", digits=0)
    row("first post, p50", lambda r: percentile(r.posts, 50) * 1000, " ms", "echo", digits=0)
    row("final text, p50", lambda r: percentile(r.finals, 50) * 1000, " ms", "llm", digits=0)
    row("final text, p99", lambda r: percentile(r.finals, 99) * 1000, " ms", "llm", digits=0)
    acks = {n: ACKS[platform_of(n, platform)] for n in names}
    row(f"{' / '.join(dict.fromkeys(acks.values()))}, p50", lambda r: percentile(r.acks, 50) * 1000, " ms", digits=0)
    row(f"{' / '.join(dict.fromkeys(acks.values()))}, p99", lambda r: percentile(r.acks, 99) * 1000, " ms", digits=0)
    row("idle CPU", lambda r: r.idle_ms_per_s, " ms/s", digits=2)
    row("peak RSS", lambda r: r.peak_rss, " MiB", "llm", "durable", digits=0)
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
    variants = [v for v in args.variants.split(",") if v]
    if "postgresql" in variants and await postgres_reachable(args.postgres_url) is None:
        print(f"PostgreSQL at {args.postgres_url} does not answer: left out")
        variants.remove("postgresql")
    shape = f"open loop at {args.rate:g} msg/s" if args.rate else f"closed loop, {args.chats} in flight"
    print(f"ratio · {machine()}")
    if variants:
        print(f"{args.platform}: {args.messages} messages over {args.chats} chats (half group mentions), {shape}; "
              f"{args.repetitions} interleaved repetitions of {', '.join(variants)}")
    runs: dict[str, list[Run]] = {v: [] for v in variants}
    for repetition in range(1, args.repetitions + 1):
        for variant in variants:
            run = await run_once(variant, args)
            runs[variant].append(run)
            print(f"  rep {repetition} {variant:>10}: {run.answered}/{run.sent} answered in {run.seconds:.1f} s, "
                  f"{run.cpu_per_message:.1f} ms CPU/msg, load {os.getloadavg()[0]:.1f}; API calls/msg: "
                  + ", ".join(f"{m} {n / max(run.sent, 1):.2f}" for m, n in run.calls.most_common())
                  + (f"; not shown exactly once: {', '.join(run.misses)}" if run.misses else ""), flush=True)
    if variants:
        table(runs, args.platform)
        targets(runs)
    for platform, count in (("telegram", args.idle_bots), ("slack", args.idle_slack),
                            ("mattermost", args.idle_mattermost)):
        if count:
            await idle_bots(WATCHES[platform], platform, count, args.idle_window)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.ratio",
                                     description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--platform", choices=tuple(WATCHES), default="telegram")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--rate", type=float, default=0.0, help="open loop at this many messages/s (0: closed)")
    parser.add_argument("--idle", type=float, default=3.0, help="seconds of idle CPU measured per run")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for one answer")
    parser.add_argument("--variants", default="echo,llm,sqlite,postgresql", help="empty: only the idle runs")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES)
    parser.add_argument("--idle-bots", type=int, default=0, help="also: 1 idle Telegram bot against N in a gateway")
    parser.add_argument("--idle-slack", type=int, default=0, help="also: 1 idle Slack Socket Mode app against N")
    parser.add_argument("--idle-mattermost", type=int, default=0, help="also: 1 idle Mattermost bot against N")
    parser.add_argument("--idle-window", type=float, default=30.0,
                        help="seconds of idle CPU measured in the idle-bots runs (a 30 s long poll, a 20 s ping)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main_async(parse_args()))
