"""The outbox's sweep, through real gateways and the local Slack: a chart whose upload died with its gateway is
posted by another gateway once the claim runs out, with no retried turn to help; an upload slower than the claim
keeps it (renewed), so nobody posts the file a second time meanwhile; a refused upload is said in the thread and
reaches the next turn's model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest
from pydantic_ai.messages import ModelResponse, TextPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from sqlalchemy import select

from adapters.slack.adapter import SlackAdapter
from gateway.pipeline.outbox_sweep import OutboxSweep
from storage.db import Database
from storage.models import OutboxFileRow
from tests.support.fakes.slack import FakeSlack
from tests.support.harness import FAST
from tests.support.slack_harness import SlackBot, running_gateway

CHART = {"chart_type": "bar", "title": "Sales by month", "x_values": ["Jan", "Feb", "Mar"],
         "series": [{"key": "sales", "values": [3, 5, 4]}]}
CLAIM = timedelta(seconds=2)  # renewed every quarter: room for a loaded machine
NO_RETRY = replace(FAST, worker_lease=timedelta(seconds=600), file_claim=CLAIM)
"""No worker retries the crashed turn within the test: only the sweep can post the file."""


def charts(seen: list[list[ModelMessage]] | None = None) -> FunctionModel:
    """Draws the chart when asked for one, then answers with what the tool said; any other turn answers 'noted'
    (recording the history it was given in `seen`)."""
    async def stream(messages: list[ModelMessage], _info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        returned = [p for m in messages[-1:] if isinstance(m, ModelRequest) for p in m.parts
                    if isinstance(p, ToolReturnPart)]
        if returned:
            yield f"Done: {returned[-1].content}"
        elif "chart" in str(messages[-1]):
            yield {0: DeltaToolCall(name="create_chart", json_args=json.dumps(CHART), tool_call_id="c1")}
        else:
            if seen is not None:
                seen.append(list(messages))
            yield "noted"
    return FunctionModel(stream_function=stream)


def posted_files(slack: FakeSlack, room: dict[str, Any], bot: SlackBot) -> list[dict[str, Any]]:
    return [f for m in slack.messages(room) if m.get("user") == bot.user_id for f in m.get("files") or []]


async def rows(database_url: str) -> list[OutboxFileRow]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(OutboxFileRow).order_by(OutboxFileRow.id))).scalars())
    finally:
        await db.close()


async def claimed_until(database_url: str) -> datetime | None:
    [row] = await rows(database_url)
    return row.claimed_until


async def until(check: Callable[[], Awaitable[bool]], *, timeout: float = 10.0) -> None:  # noqa: ASYNC109
    """Return once `check()` is true: the database has no change to wait on, so it is asked every 50 ms."""
    async with asyncio.timeout(timeout):
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def statuses(database_url: str) -> list[str]:
    return [row.status for row in await rows(database_url)]


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
async def test_a_file_whose_upload_died_with_its_gateway_is_posted_by_another_once_the_claim_runs_out(
        slack: FakeSlack, database_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    slack.files.hold_uploads()
    async with running_gateway(slack, [bot], database_url=database_url, redis_url=None, model=charts(),
                               capabilities=[{"id": "charts"}], tuning=NO_RETRY) as crashing:
        await slack.user_says(dm, alice, "chart our sales")
        await slack.wait_for(lambda: slack.files.holding == 1, timeout=15)
        await crashing.abort()  # the process dies with the bytes on their way
    assert [row.status for row in await rows(database_url)] == ["posting"]
    assert posted_files(slack, dm, bot) == []
    async with running_gateway(slack, [bot], database_url=database_url, redis_url=None, model=charts(),
                               capabilities=[{"id": "charts"}], tuning=NO_RETRY):
        await slack.wait_for(lambda: len(posted_files(slack, dm, bot)) == 1, timeout=15)
        await until(lambda: _is(statuses(database_url), ["posted"]))
    [row] = await rows(database_url)
    assert (row.status, row.data) == ("posted", b"")
    [answer] = [t for t in slack.texts(dm, by=bot.app) if t]
    assert answer.startswith("Done: The bar chart 'Sales by month'") and "is on its way" in answer


async def test_an_upload_slower_than_the_claim_keeps_it_and_the_file_is_posted_once(
        slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    slack.files.hold_uploads()
    other = SlackAdapter(bot_id=bot.name, token=bot.app.token, transport="http", signing_secret="s",
                         api_base_url=slack.url)
    await other.open()
    try:
        async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=charts(),
                                   capabilities=[{"id": "charts"}], tuning=NO_RETRY) as gateway:
            await slack.user_says(dm, alice, "chart our sales")
            await slack.wait_for(lambda: slack.files.holding == 1, timeout=15)
            first = await claimed_until(sqlite_url)
            assert first is not None
            async def renewed() -> bool:  # past three claims' length while the upload is held
                now = await claimed_until(sqlite_url)
                return now is not None and now > first + 3 * CLAIM
            await until(renewed)
            assert gateway.db is not None
            assert await OutboxSweep(gateway.db, {bot.name: other}, claim=CLAIM).deliver_expired() == 0
            slack.files.release_uploads()
            await slack.wait_for(lambda: len(posted_files(slack, dm, bot)) == 1, timeout=15)
            await until(lambda: _is(statuses(sqlite_url), ["posted"]))
        assert len(posted_files(slack, dm, bot)) == 1
        assert [c.method for c in slack.calls].count("files.getUploadURLExternal") == 1
    finally:
        await other.close()


async def test_a_refused_upload_is_said_and_the_next_turn_knows_the_file_never_arrived(
        slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    bot.app.scopes.discard("files:write")
    alice = slack.add_user("alice", real_name="Alice")
    dm = slack.open_dm(alice, bot.app)
    seen: list[list[ModelMessage]] = []
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=charts(seen),
                               capabilities=[{"id": "charts"}]):
        await slack.user_says(dm, alice, "chart our sales")
        await slack.wait_for(lambda: any(t.startswith("I made") for t in slack.texts(dm, by=bot.app)), timeout=15)
        await slack.wait_for(lambda: any(t.startswith("Done:") for t in slack.texts(dm, by=bot.app)))
        await slack.user_says(dm, alice, "where is it?")
        await slack.wait_for(lambda: len(seen) == 1, timeout=15)
        await until(lambda: _is(statuses(sqlite_url), ["failed"]))
    said = [p.content for m in seen[0] if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, TextPart)]
    assert any(text.startswith("I made sales-by-month.png but could not post it here: this Slack app may not post "
                               "files") for text in said)


async def _is(value: Awaitable[list[str]], expected: list[str]) -> bool:
    return await value == expected
