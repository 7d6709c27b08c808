"""End to end: a real Gateway answering through the local Telegram server with a model that answers at once.

    .venv/bin/python -m bench.end_to_end [--messages 120] [--users 4] [--groups 2] [--backend sqlite]

Each user talks to the bot in a private chat and, @mentioning it, in every group; each of these sessions
sends its share of the messages one after another, waiting for each answer (all sessions at once).
With --burst every message is sent up front instead. Measured: the time from `user_says` to the final
answer being visible on the local Telegram, and the process RSS before and after. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import math
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bench._common import (
    DEFAULT_POSTGRES,
    current_rss_mib,
    machine,
    max_rss_mib,
    ms,
    percentile,
    postgres_reachable,
    postgres_schema,
    sqlite_database,
)
from bench.models import TAG, instant_model
from gateway.agents.models import ModelResolver
from gateway.config.schema import GatewayConfig, Settings
from gateway.config.secrets import SecretSource
from gateway.server.app import Gateway, Tuning
from local_platforms.telegram import LocalTelegram

JSON = dict[str, Any]
BOT_USERNAME = "bench_helper_bot"
BENCH_TUNING = Tuning(worker_lease=timedelta(seconds=10), idle_poll=0.2, shutdown_grace=5.0, poll_timeout=1,
                      transport_first_delay=0.2, transport_lease_ttl=3.0)


class AnswerWatch:
    """Notes the moment each expected answer is visible, re-checked after every Bot API call.

    New sendMessage/editMessageText calls are scanned for tags; a tag's answer counts as visible once
    the chat's current messages hold the final text (the placeholder "…" carries no tag).
    """

    def __init__(self, telegram: LocalTelegram) -> None:
        self._telegram = telegram
        self._expected: dict[str, tuple[int, str, asyncio.Future[float]]] = {}
        self._candidates: set[str] = set()
        self._seen = 0

    def expect(self, tag: str, chat_id: int) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._expected[tag] = (chat_id, f"answer {tag}", future)
        return future

    def check(self) -> bool:
        """The predicate of `LocalTelegram.wait_for`; never true, so the watch runs until cancelled."""
        calls = self._telegram.calls
        for call in calls[self._seen:]:
            if call.method in ("sendMessage", "editMessageText"):
                self._candidates.update(t for t in TAG.findall(str(call.params.get("text", "")))
                                        if t in self._expected)
        self._seen = len(calls)
        now = time.perf_counter()
        for tag in list(self._candidates):
            chat_id, final, future = self._expected[tag]
            if any(m.get("text") == final for m in self._telegram.bot_messages(chat_id)):
                self._candidates.discard(tag)
                del self._expected[tag]
                if not future.done():
                    future.set_result(now)
        return False


@dataclass(frozen=True, slots=True)
class Session:
    user: JSON
    chat: JSON

    @property
    def direct(self) -> bool:
        return self.chat["type"] == "private"


@dataclass(slots=True)
class Figures:
    backend: str
    latencies: list[float]
    direct: list[float]
    group: list[float]
    lost: int
    seconds: float
    rss_before: float
    rss_after: float
    maxrss_before: float
    maxrss_after: float
    warmup: float


def bench_config(telegram_url: str, bot_name: str) -> GatewayConfig:
    return GatewayConfig.model_validate({
        "agents": [{"name": "assistant", "model": "bench:instant", "instructions": "Answer briefly."}],
        "bots": [{"name": bot_name, "platform": "telegram", "token": "${BENCH_TELEGRAM_TOKEN}",
                  "api_base_url": telegram_url, "transport": "polling", "agent": "assistant",
                  "binding": {"rate_limit": None}}],
        "server": {"host": "127.0.0.1", "port": 0},
    })


async def run_backend(backend: str, database_url: str, args: argparse.Namespace) -> Figures:
    rss_before, maxrss_before = current_rss_mib(), max_rss_mib()
    token = f"{700_000_000 + uuid.uuid4().int % 10**8}:{uuid.uuid4().hex}"
    tuning = dataclasses.replace(BENCH_TUNING, worker_concurrency=args.concurrency)
    async with LocalTelegram() as telegram:
        telegram.add_bot(token, username=BOT_USERNAME, first_name="Helper")
        users = [telegram.add_user(5000 + u, f"User{u}", username=f"user{u}") for u in range(args.users)]
        groups = [telegram.group(-100_000 - g, f"Team {g}", supergroup=True) for g in range(args.groups)]
        sessions = [Session(user, telegram.private_chat(user)) for user in users]
        sessions += [Session(user, group) for group in groups for user in users]
        watch = AnswerWatch(telegram)
        watcher = asyncio.create_task(telegram.wait_for(watch.check, timeout=24 * 3600))
        config = bench_config(telegram.url, f"bench-{uuid.uuid4().hex[:8]}")
        secrets = SecretSource(environ={"BENCH_TELEGRAM_TOKEN": token})
        models = ModelResolver(config.models, secrets, fixed={"bench:instant": instant_model()})
        settings = Settings(database_url=database_url, redis_url=args.redis_url)
        numbers = iter(range(1, 10**6))

        async def say(session: Session) -> tuple[bool, float]:
            """One message; returns (private chat?, seconds until its answer is visible or NaN if never)."""
            tag = f"q-{next(numbers):06d}"
            text = f"question {tag}" if session.direct else f"@{BOT_USERNAME} question {tag}"
            answered = watch.expect(tag, session.chat["id"])
            started = time.perf_counter()
            await telegram.user_says(token, session.chat, session.user, text)
            try:
                async with asyncio.timeout(args.timeout):
                    return session.direct, await answered - started
            except TimeoutError:
                return session.direct, math.nan

        try:
            async with Gateway(config, settings, secrets=secrets, models=models, tuning=tuning) as gateway:
                await telegram.wait_for(lambda: all(a.identity is not None for a in gateway.adapters.values()),
                                        timeout=30)
                _, warmup = await say(sessions[0])  # the first turn pays for lazy imports and the first poll
                started = time.perf_counter()
                if args.burst:
                    results = await asyncio.gather(*(say(sessions[n % len(sessions)])
                                                     for n in range(args.messages)))
                else:
                    shares = [range(s, args.messages, len(sessions)) for s in range(len(sessions))]

                    async def converse(session: Session, count: int) -> list[tuple[bool, float]]:
                        return [await say(session) for _ in range(count)]

                    per_session = await asyncio.gather(*(converse(s, len(share))
                                                         for s, share in zip(sessions, shares, strict=True)))
                    results = [result for batch in per_session for result in batch]
                seconds = time.perf_counter() - started
                rss_after, maxrss_after = current_rss_mib(), max_rss_mib()
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
    latencies = [latency for _, latency in results if not math.isnan(latency)]
    direct = [latency for is_direct, latency in results if is_direct and not math.isnan(latency)]
    group = [latency for is_direct, latency in results if not is_direct and not math.isnan(latency)]
    return Figures(backend=backend, latencies=latencies, direct=direct, group=group,
                   lost=len(results) - len(latencies), seconds=seconds,
                   rss_before=rss_before, rss_after=rss_after, maxrss_before=maxrss_before,
                   maxrss_after=maxrss_after, warmup=warmup)


def report(f: Figures, args: argparse.Namespace) -> None:
    answered = len(f.latencies)
    print(f"\n== {f.backend}")
    print(f"answered {answered}/{answered + f.lost} in {f.seconds:.2f} s -> {answered / f.seconds:.1f} answers/s"
          f"{f'  ({f.lost} NOT ANSWERED within {args.timeout:.0f} s)' if f.lost else ''}")
    print(f"latency  user_says -> final answer visible: p50 {ms(percentile(f.latencies, 50))}, "
          f"p95 {ms(percentile(f.latencies, 95))}, max {ms(max(f.latencies, default=math.nan))} "
          f"(warm-up message, not counted: {ms(f.warmup)})")
    for name, values in (("private chats", f.direct), ("groups", f.group)):
        if values:
            print(f"         {name}: p50 {ms(percentile(values, 50))}, p95 {ms(percentile(values, 95))}, "
                  f"max {ms(max(values))} ({len(values)} messages)")
    print(f"memory   RSS {f.rss_before:.1f} MiB before -> {f.rss_after:.1f} MiB after; "
          f"peak (ru_maxrss) {f.maxrss_before:.1f} -> {f.maxrss_after:.1f} MiB")


async def run_sqlite(args: argparse.Namespace) -> Figures:
    async with sqlite_database() as url:
        return await run_backend("SQLite (temporary file)", url, args)


async def run_postgres(args: argparse.Namespace) -> Figures | None:
    version = await postgres_reachable(args.postgres_url)
    if version is None:
        return None
    async with postgres_schema(args.postgres_url) as url:
        return await run_backend(f"PostgreSQL {version} (scratch schema)", url, args)


def main(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sessions = args.users * (1 + args.groups)
    print(f"end to end · {machine()}")
    print(f"{args.messages} messages from {args.users} users in {args.users} private chats + {args.groups} groups "
          f"({sessions} sessions, {'all sent at once' if args.burst else 'each waiting for its answer'}); "
          f"worker concurrency {args.concurrency}; cache: {'Redis' if args.redis_url else 'in-process'}")
    # One event loop per backend: a stopped Gateway leaves its closed HTTP socket registered with the
    # loop's selector, which can silently swallow a later socket that reuses the descriptor number.
    if args.backend in ("sqlite", "both"):
        report(asyncio.run(run_sqlite(args)), args)
    if args.backend in ("postgresql", "both"):
        figures = asyncio.run(run_postgres(args))
        if figures is None:
            print(f"\n== PostgreSQL: skipped, {args.postgres_url} is not reachable")
        else:
            report(figures, args)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.end_to_end",
                                     description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--messages", type=int, default=120, help="messages to send, M (default 120)")
    parser.add_argument("--users", type=int, default=4, help="users, each with a private chat (default 4)")
    parser.add_argument("--groups", type=int, default=2, help="groups every user talks in (default 2)")
    parser.add_argument("--burst", action="store_true", help="send every message at once instead of in turn")
    parser.add_argument("--concurrency", type=int, default=8, help="Tuning.worker_concurrency (default 8)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for one answer (default 30)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES,
                        help=f"server for the scratch schema (default {DEFAULT_POSTGRES})")
    parser.add_argument("--redis-url", default=None, help="use Redis as the cache (default: in-process)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(parse_args())
