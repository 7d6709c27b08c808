"""The operator's schedules (`schedules:` in gateway.yaml): each firing is an inbox item with a unique key, posted
once in the chat it names, by one gateway or by two replicas sharing a database; a firing missed while no replica ran
comes late with its time said, or is skipped."""

from __future__ import annotations

from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from pydantic_ai import ModelMessage
from pydantic_ai.models.function import AgentInfo
from sqlalchemy import update

from capabilities.memory_files.build import ROOM_SCOPE
from gateway.pipeline.notices import FIRING_SENT_AGAIN
from gateway.server.app import Gateway
from storage.db import Database
from storage.models import ScheduleMarkRow, utcnow
from tests.conftest import REDIS
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import FAST, TelegramBot, running_gateway
from tests.support.records import inbox_rows, until_replies_recorded
from tests.support.scripted import echoes, scripted

EVERY_SECOND = "* * * * * *"
"""Six fields, the sixth seconds: a firing a second, so a test sees several in a few seconds."""
TICKING = replace(FAST, schedule_tick=0.2)
RETRY_SOON = replace(TICKING, worker_lease=timedelta(seconds=1))


def schedule(bot: TelegramBot, chat: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"name": "tick", "cron": EVERY_SECOND, "bot": bot.name, "chat": str(chat["id"]), **fields}


def posts(telegram: FakeTelegram, chat: dict[str, Any]) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat["id"])]


async def firing_keys(database_url: str) -> list[str]:
    return [row.logical_id for row in await inbox_rows(database_url) if row.logical_id.startswith("schedule:")]


async def test_a_schedule_posts_its_text_once_at_each_firing(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    room = telegram.group(-1001, "Ops")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=echoes(),
                               tuning=TICKING, top={"schedules": [schedule(bot, room, text="Stand-up time")]}):
        await telegram.wait_for(lambda: len(posts(telegram, room)) >= 3, timeout=15)
    keys = await firing_keys(database_url)
    assert posts(telegram, room)[:3] == ["Stand-up time"] * 3
    assert len(keys) == len(set(keys)) == len(posts(telegram, room)), "one post per firing, each stored once"


async def test_a_firing_cut_off_while_it_was_sent_in_a_dm_is_posted_again_saying_so(telegram: FakeTelegram,
                                                                                  sqlite_url: str) -> None:
    """Telegram cannot say whether a post that was being sent arrived: a reminder lost in silence is worse than one
    shown twice, so the retry posts it again and says why."""
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(ada)
    telegram.fail_next("sendMessage", retry_after=30)  # the first firing's send is held: the process dies in it
    stand_up = {"schedules": [schedule(bot, chat, text="Stand-up")]}
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                               tuning=RETRY_SOON, top=stand_up) as crashing:
        await until_replies_recorded(sqlite_url, 1)  # recorded as being sent, before the send
        await crashing.abort()
    assert posts(telegram, chat) == []
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                               tuning=RETRY_SOON):
        await telegram.wait_for(lambda: posts(telegram, chat)[:1] == [f"{FIRING_SENT_AGAIN}\n\nStand-up"])


async def test_a_scheduled_prompt_runs_the_agent_and_posts_its_answer(telegram: FakeTelegram,
                                                                       database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    room = telegram.group(-1002, "Ops")
    spec = schedule(bot, room, prompt="Summarise the night's alerts.")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=echoes(),
                               tuning=TICKING, top={"schedules": [spec]}):
        await telegram.wait_for(lambda: any("Summarise the night's alerts." in p for p in posts(telegram, room)),
                                timeout=40)
    answer = posts(telegram, room)[0]
    assert answer.startswith("echo: [Schedule tick] Scheduled run 'tick'"), answer


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_two_replicas_post_each_firing_once(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    room = telegram.group(-1003, "Ops")
    top = {"schedules": [schedule(bot, room, text="beat")]}
    async with AsyncExitStack() as stack:
        replicas: list[Gateway] = [await stack.enter_async_context(running_gateway(
            telegram, [bot], database_url=database_url, redis_url=REDIS, model=echoes(), tuning=TICKING, top=top))
            for _ in range(2)]
        await telegram.wait_for(lambda: len(posts(telegram, room)) >= 4, timeout=15)
    fired = [gateway.metrics.registry.get_sample_value("gateway_firings_total", {
        "bot": bot.name, "platform": "telegram", "kind": "schedule", "outcome": "fired"}) or 0
        for gateway in replicas]
    keys = await firing_keys(database_url)
    assert len(keys) == len(set(keys)) >= 4
    assert len(posts(telegram, room)) == len(keys), "each stored firing posted once"
    assert sum(fired) == len(keys), f"each firing counted by the one replica whose write stored it: {fired}"


async def missed(database_url: str, *, ago: timedelta) -> None:
    """Every schedule's mark put back, as if no replica had run since then."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            await session.execute(update(ScheduleMarkRow).values(next_fire_at=utcnow() - ago))
    finally:
        await db.close()


@pytest.mark.parametrize("policy", ["late", "skip"])
async def test_a_firing_missed_while_no_replica_ran_comes_late_once_or_is_skipped(
        telegram: FakeTelegram, database_url: str, policy: str) -> None:
    bot = TelegramBot().register(telegram)
    room = telegram.group(-1004, "Ops")
    hourly = schedule(bot, room, text="Hourly report", cron="0 * * * *", missed=policy)
    top = {"schedules": [hourly]}
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=echoes(),
                               tuning=TICKING, top=top):
        pass  # the first start writes the mark: the next full hour
    await missed(database_url, ago=timedelta(hours=3))
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=echoes(),
                               tuning=TICKING, top=top) as gateway:
        outcome = "late" if policy == "late" else "skipped"
        await telegram.wait_for(lambda: gateway.metrics.registry.get_sample_value("gateway_firings_total", {
            "bot": bot.name, "platform": "telegram", "kind": "schedule", "outcome": outcome}) == 1, timeout=10)
        if policy == "late":
            await telegram.wait_for(lambda: len(posts(telegram, room)) == 1, timeout=10)
    if policy == "late":
        assert Counter(p.split("\n\n")[0] for p in posts(telegram, room)) == {"Hourly report": 1}
        assert "it comes late because the gateway was not running then" in posts(telegram, room)[0]
    else:
        assert posts(telegram, room) == [] and await firing_keys(database_url) == []


async def test_a_scheduled_run_in_a_group_reaches_the_rooms_notes(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    room = telegram.group(-1005, "Ops")

    def whose(_messages: list[ModelMessage], info: AgentInfo) -> str:
        return "room notes" if ROOM_SCOPE in (info.instructions or "") else "someone else's notes"

    spec = schedule(bot, room, prompt="What do the notes say?")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=scripted(whose),
                               tuning=TICKING, capabilities=[{"id": "memory_files"}], top={"schedules": [spec]}):
        await telegram.wait_for(lambda: len(posts(telegram, room)) >= 1)
    assert posts(telegram, room)[0] == "room notes"
