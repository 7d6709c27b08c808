"""Inbox throughput: accept N events (deduplicating insert), then claim and complete them with K workers.

    .venv/bin/python -m bench.inbox_throughput [--events 2000] [--workers 4] [--backend both]

Runs on a temporary SQLite file and, when it answers, on PostgreSQL in a scratch schema that the
bench creates and drops. Prints accepts/s, turns/s and the claim latency; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select

from bench._common import (
    DEFAULT_POSTGRES,
    machine,
    ms,
    percentile,
    postgres_reachable,
    postgres_schema,
    sqlite_database,
)
from gateway.pipeline.inbox import Inbox
from storage.db import Database
from storage.migrate import upgrade
from storage.models import InboxRow

LEASE = timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class Event:
    logical_id: str
    conversation_key: str
    payload: dict[str, Any]


@dataclass(slots=True)
class Figures:
    backend: str
    offered: int = 0
    accepted: int = 0
    duplicates: int = 0
    accept_seconds: float = 0.0
    accept_latencies: list[float] = field(default_factory=list)
    turns: int = 0
    turn_seconds: float = 0.0
    claim_latencies: list[float] = field(default_factory=list)
    empty_claims: int = 0
    complete_latencies: list[float] = field(default_factory=list)
    stored_done: int = 0


def telegram_update(update_id: int, chat_id: int, user_id: int, message_id: int) -> dict[str, Any]:
    """A payload the size and shape of a real Telegram message update (about 400 bytes of JSON)."""
    user = {"id": user_id, "is_bot": False, "first_name": f"User{user_id}", "username": f"user{user_id}"}
    chat = {"id": chat_id, "type": "supergroup", "title": f"Team {chat_id}"}
    return {"update_id": update_id, "message": {
        "message_id": message_id, "from": user, "chat": chat, "date": 1_760_000_000 + update_id,
        "text": f"@helper_bot question number {update_id}: what changed since yesterday?",
        "entities": [{"type": "mention", "offset": 0, "length": 11}]}}


def make_events(count: int, conversations: int, duplicate_share: float, seed: int) -> list[Event]:
    """`count` distinct events over `conversations` chats, plus redeliveries of a share of them, shuffled."""
    rng = random.Random(seed)
    events = []
    for n in range(count):
        chat_id = -1_000_000 - n % conversations
        message_id = n // conversations + 1
        events.append(Event(logical_id=f"telegram:bench:{chat_id}:{message_id}",
                            conversation_key=f"telegram:bench:{chat_id}",
                            payload=telegram_update(n + 1, chat_id, 1000 + n % 7, message_id)))
    # A chat's messages arrive in order; a redelivery comes a little after its original, as a platform
    # retrying an unacknowledged delivery would.
    timeline = [(float(n), event) for n, event in enumerate(events)]
    for n in rng.sample(range(count), int(count * duplicate_share)):
        timeline.append((n + rng.uniform(0.5, 50), events[n]))
    return [event for _, event in sorted(timeline, key=lambda pair: pair[0])]


async def accept_all(inbox: Inbox, events: list[Event], concurrency: int, figures: Figures) -> None:
    pending = iter(events)

    async def acceptor() -> None:
        for event in pending:
            started = time.perf_counter()
            fresh = await inbox.accept(logical_id=event.logical_id, bot_name="bench",
                                       conversation_key=event.conversation_key, payload=event.payload)
            figures.accept_latencies.append(time.perf_counter() - started)
            if fresh:
                figures.accepted += 1
            else:
                figures.duplicates += 1

    started = time.perf_counter()
    await asyncio.gather(*(acceptor() for _ in range(concurrency)))
    figures.accept_seconds = time.perf_counter() - started


async def work_off(inbox: Inbox, workers: int, batch: int, figures: Figures) -> None:
    """K workers claim up to `batch` items each round and complete them, until every accepted event is done."""

    async def worker(name: str) -> None:
        while figures.turns < figures.accepted:
            started = time.perf_counter()
            items = await inbox.claim(name, lease=LEASE, limit=batch)
            elapsed = time.perf_counter() - started
            if not items:
                figures.empty_claims += 1
                await asyncio.sleep(0.001)  # every open conversation is busy with another worker
                continue
            figures.claim_latencies.append(elapsed)
            for item in items:
                started = time.perf_counter()
                await inbox.complete(name, item.id)
                figures.complete_latencies.append(time.perf_counter() - started)
                figures.turns += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(f"bench-worker-{k}") for k in range(workers)))
    figures.turn_seconds = time.perf_counter() - started


async def run_backend(backend: str, url: str, events: list[Event], args: argparse.Namespace) -> Figures:
    figures = Figures(backend=backend, offered=len(events))
    db = Database(url)
    try:
        await upgrade(db)
        inbox = Inbox(db)
        await accept_all(inbox, events, args.accept_concurrency, figures)
        await work_off(inbox, args.workers, args.batch, figures)
        async with db.session() as session:
            figures.stored_done = (await session.execute(
                select(func.count()).select_from(InboxRow).where(InboxRow.status == "done"))).scalar_one()
    finally:
        await db.close()
    return figures


def report(figures: Figures) -> None:
    f = figures
    print(f"\n== {f.backend}")
    print(f"accept   {f.offered} offered: {f.accepted} stored, {f.duplicates} redeliveries dropped "
          f"in {f.accept_seconds:.2f} s -> {f.offered / f.accept_seconds:,.0f} accepts/s "
          f"(latency p50 {ms(percentile(f.accept_latencies, 50))}, p95 {ms(percentile(f.accept_latencies, 95))})")
    print(f"turns    {f.turns} claimed+completed in {f.turn_seconds:.2f} s -> {f.turns / f.turn_seconds:,.0f} turns/s"
          f" ({f.stored_done} rows done)")
    print(f"claim    {len(f.claim_latencies)} claims: p50 {ms(percentile(f.claim_latencies, 50))}, "
          f"p95 {ms(percentile(f.claim_latencies, 95))}, max {ms(max(f.claim_latencies, default=float('nan')))}; "
          f"{f.empty_claims} empty claims")
    print(f"complete p50 {ms(percentile(f.complete_latencies, 50))}, p95 {ms(percentile(f.complete_latencies, 95))}")


async def main(args: argparse.Namespace) -> None:
    events = make_events(args.events, args.conversations, args.duplicates, args.seed)
    print(f"inbox throughput · {machine()}")
    print(f"{args.events} events (+{len(events) - args.events} redeliveries) over {args.conversations} conversations; "
          f"{args.accept_concurrency} concurrent acceptors; {args.workers} workers claiming up to {args.batch} each")
    if args.backend in ("sqlite", "both"):
        async with sqlite_database() as url:
            report(await run_backend("SQLite (temporary file, WAL)", url, events, args))
    if args.backend in ("postgresql", "both"):
        version = await postgres_reachable(args.postgres_url)
        if version is None:
            print(f"\n== PostgreSQL: skipped, {args.postgres_url} is not reachable")
        else:
            async with postgres_schema(args.postgres_url) as url:
                report(await run_backend(f"PostgreSQL {version} (scratch schema)", url, events, args))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.inbox_throughput",
                                     description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--events", type=int, default=2000, help="distinct events to accept (default 2000)")
    parser.add_argument("--conversations", type=int, default=100, help="chats they are spread over (default 100)")
    parser.add_argument("--duplicates", type=float, default=0.1,
                        help="share of events delivered a second time (default 0.1)")
    parser.add_argument("--accept-concurrency", type=int, default=8, help="concurrent acceptors (default 8)")
    parser.add_argument("--workers", type=int, default=4, help="concurrent claiming workers, K (default 4)")
    parser.add_argument("--batch", type=int, default=4, help="items a worker claims at once (default 4)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES,
                        help=f"server for the scratch schema (default {DEFAULT_POSTGRES})")
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
