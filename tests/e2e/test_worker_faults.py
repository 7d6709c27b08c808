"""A worker tells a dependency fault from a failed turn: the first waits and retries, the second is given up and
said in the chat."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from redis import exceptions as redis_errors
from sqlalchemy import select

from gateway.pipeline.inbox import MAX_ATTEMPTS, Inbox, InboxItem
from gateway.pipeline.router import GIVEN_UP
from gateway.pipeline.worker import Worker, is_dependency_fault
from storage.db import Database
from storage.models import InboxRow
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.mattermost_harness import MattermostBot, running_gateway
from tests.support.records import inbox_rows
from tests.support.scripted import echoes


@asynccontextmanager
async def working(inbox: Inbox, handle: Callable[[InboxItem], Awaitable[None]],
                  give_up: Callable[[InboxItem], Awaitable[None]] | None = None) -> AsyncIterator[Worker]:
    worker = Worker(inbox, handle, give_up=give_up, idle_poll=0.05)
    task = asyncio.create_task(worker.run())
    try:
        yield worker
        await worker.drain(grace=5)  # the turn running now records how it ended
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def rows(db: Database) -> list[tuple[str, int]]:
    async with db.session() as session:
        return [(row.status, row.failures) for row in (await session.execute(select(InboxRow))).scalars()]


async def test_a_dependency_fault_is_retried_without_spending_an_attempt(db: Database) -> None:
    inbox = Inbox(db)
    await inbox.accept(logical_id="m0", bot_name="bot", conversation_key="c1", payload={})
    answered = asyncio.Event()
    tries: list[int] = []

    async def handle(item: InboxItem) -> None:
        tries.append(item.attempts)
        if len(tries) == 1:
            raise RuntimeError("rate limit") from ConnectionRefusedError(111, "Connection refused")
        answered.set()

    async with working(inbox, handle):
        async with asyncio.timeout(5):
            await answered.wait()
    assert tries == [1, 2]
    assert await rows(db) == [("done", 0)]


async def test_a_turn_failing_every_attempt_is_given_up_and_said(db: Database) -> None:
    inbox = Inbox(db)
    await inbox.accept(logical_id="m0", bot_name="bot", conversation_key="c1", payload={"n": 0})
    await inbox.accept(logical_id="m1", bot_name="bot", conversation_key="c1", payload={"n": 1})
    given_up: list[int] = []
    next_one = asyncio.Event()

    async def handle(item: InboxItem) -> None:
        if item.payload["n"] == 1:
            next_one.set()
            return
        raise ValueError("a bug in the turn")

    async def give_up(item: InboxItem) -> None:
        given_up.append(item.payload["n"])

    async with working(inbox, handle, give_up):
        async with asyncio.timeout(5):
            await next_one.wait()
    assert given_up == [0]
    assert sorted(await rows(db)) == [("done", 0), ("failed", MAX_ATTEMPTS)]


def test_an_sdk_error_raised_from_a_refused_socket_is_a_dependency_fault() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as exc:
            raise RuntimeError("httpx.ConnectError: All connection attempts failed") from exc
    except RuntimeError as wrapped:
        assert is_dependency_fault(wrapped)
    assert not is_dependency_fault(ValueError("a bug")), "nor is a plain failure of the turn"


async def test_a_message_whose_turn_fails_every_attempt_is_told_so_in_the_chat(mattermost: FakeMattermost,
                                                                                sqlite_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice")
    mattermost.add_team("acme", members=[bot.user, alice])
    dm = mattermost.direct_channel(alice, bot.user)
    mattermost.fail_next("create_post", 400, times=MAX_ATTEMPTS)  # the placeholder refused: the turn's own failure
    async with running_gateway(mattermost, [bot], database_url=sqlite_url, model=echoes()):
        await mattermost.user_posts(dm, alice, "hi")
        await mattermost.wait_for(lambda: [p["message"] for p in mattermost.posts(dm, user=bot.user)] == [GIVEN_UP])
    assert [(row.status, row.failures) for row in await inbox_rows(sqlite_url)] == [("failed", MAX_ATTEMPTS)]


def test_redis_that_cannot_serve_is_a_dependency_fault_and_a_refused_command_is_not() -> None:
    """Classified by Redis's own exception classes (loaded here, as in a gateway that has a REDIS_URL)."""
    for outage in (redis_errors.ConnectionError("Connection reset by peer"), redis_errors.TimeoutError("Timeout"),
                   redis_errors.ReadOnlyError("You can't write against a read only replica.")):
        assert is_dependency_fault(outage), outage
    assert not is_dependency_fault(redis_errors.ResponseError("WRONGTYPE Operation against a key"))
