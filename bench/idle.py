"""What each idle bot adds to a gateway: one bot against N, each in a fresh gateway process and local server.

`bench.ratio --idle-bots N` (Telegram, 30 s long polls), `--idle-slack N` (Socket Mode apps) and
`--idle-mattermost N` (WebSocket event streams). Per gateway: the time from its start until every bot polls or
holds its socket, the CPU spent until then, RSS and idle CPU once settled, and one message answered by the first
bot. The figures per added bot are the differences divided by N - 1.
"""

from __future__ import annotations

import asyncio
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench._common import sqlite_database
from bench.process import cpu_seconds, rss_mib, spawn, stop
from bench.watch import Watch

CONNECTED = {"telegram": "polling", "slack": "holding their sockets", "mattermost": "holding their event streams"}
KINDS = {"telegram": "Telegram bots (30 s long polls)", "slack": "Slack Socket Mode apps",
         "mattermost": "Mattermost WebSocket bots"}


@dataclass
class IdleRun:
    bots: int
    start_seconds: float
    start_cpu: float
    rss_mib: float
    idle_ms_per_s: float
    latency: float


async def idle_run(watch: Watch, platform: str, bots: int, window: float) -> IdleRun:
    """`bots` idle bots in one gateway process (SQLite): time until all connect, RSS, idle CPU, one answer."""
    async with watch, sqlite_database() as database_url:
        made, chats = watch.populate(bots, 1)
        argv = [sys.executable, "-m", "bench.gateway_bot", "--platform", platform, "--url", watch.url,
                "--token", ",".join(bot.token for bot in made), "--database-url", database_url,
                "--poll-timeout", "30"]  # Telegram's usual long poll: what an idle bot costs in production
        if platform == "slack":
            argv += ["--app-token", ",".join(bot.app_token for bot in made)]
        started = time.monotonic()
        process = await spawn(argv)
        try:
            await watch.until_connected(made, within=600)
            start_seconds, start_cpu = time.monotonic() - started, cpu_seconds(process.pid)
            await asyncio.sleep(2.0)
            rss, before = rss_mib(process.pid), cpu_seconds(process.pid)
            await asyncio.sleep(window)
            idle = (cpu_seconds(process.pid) - before) / window * 1000
            pending = await watch.say(made[0], chats[0], "q-000001")
            answered = await watch.record.settle(chats[0].key, pending, 30)
            latency = (await pending.done if answered and pending.done else math.nan) - pending.sent
        finally:
            await stop(process)
    return IdleRun(bots=bots, start_seconds=start_seconds, start_cpu=start_cpu, rss_mib=rss, idle_ms_per_s=idle,
                   latency=latency)


async def idle_bots(watch: Callable[[], Watch], platform: str, count: int, window: float) -> None:
    """Print what each added bot costs: a gateway with one bot against one with `count`."""
    one, many = await idle_run(watch(), platform, 1, window), await idle_run(watch(), platform, count, window)
    extra = max(1, many.bots - one.bots)
    print(f"\nidle {KINDS[platform]} in one gateway (SQLite), {one.bots} and then {many.bots}, "
          f"idle CPU over {window:g} s:")
    print(f"  all {CONNECTED[platform]} after {one.start_seconds:.1f} s and {many.start_seconds:.1f} s "
          f"(CPU {one.start_cpu:.1f} s and {many.start_cpu:.1f} s); "
          f"RSS {one.rss_mib:.0f} and {many.rss_mib:.0f} MiB ({(many.rss_mib - one.rss_mib) / extra:.3f} MiB per "
          f"added bot); idle CPU {one.idle_ms_per_s:.1f} and {many.idle_ms_per_s:.1f} ms/s "
          f"({(many.idle_ms_per_s - one.idle_ms_per_s) / extra:.3f} ms/s per added bot); "
          f"a message answered in {one.latency * 1000:.0f} and {many.latency * 1000:.0f} ms", flush=True)
