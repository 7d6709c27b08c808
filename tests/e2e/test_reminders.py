"""Reminders the agent sets (`reminders`): "remind me" posts once in the same chat, across a restart and with two
replicas; a repeating one waits for approval; a chat reaches only its own reminders."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo
from sqlalchemy import select, update

from storage.db import Database
from storage.models import ApprovalRow, ReminderRow, utcnow
from tests.conftest import REDIS
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import FAST, TelegramBot, running_gateway
from tests.support.records import inbox_rows
from tests.support.scripted import calls_then_answers, echoes, last_prompt, stepped, stepped_with_info, user_prompts

TICKING = replace(FAST, schedule_tick=0.2)
REMINDERS = [{"id": "reminders"}]
SCHEDULER = "sweep: schedules"


def sets(when: str, text: str = "Call Anna", **more: Any) -> Any:
    return calls_then_answers(("schedule_message", {"when": when, "text": text, **more}))


def posts(telegram: FakeTelegram, chat: dict[str, Any]) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat["id"])]


async def reminders(database_url: str) -> list[ReminderRow]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(ReminderRow).order_by(ReminderRow.id))).scalars())
    finally:
        await db.close()


async def firings(database_url: str) -> list[str]:
    return [row.logical_id for row in await inbox_rows(database_url) if row.logical_id.startswith("reminder:")]


async def test_remind_me_posts_once_in_the_same_chat(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=sets("in 1 second"),
                               tuning=TICKING, capabilities=REMINDERS):
        await telegram.user_says(bot.token, chat, alice, "remind me in a second to call Anna")
        await telegram.wait_for(lambda: "⏰ Reminder: Call Anna" in posts(telegram, chat))
        await telegram.wait_for(lambda: len(posts(telegram, chat)) == 2)
    stored = await reminders(database_url)
    assert posts(telegram, chat)[0].startswith("done: Reminder #1 set for ")
    keys = await firings(database_url)
    assert [(r.status, r.fired) for r in stored] == [("done", 1)]
    assert len(keys) == 1 and keys[0].startswith(f"reminder:{stored[0].id}:")


async def due_now(database_url: str) -> None:
    """Every active reminder falls due this instant, as if its time had come while the gateway was away."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            await session.execute(update(ReminderRow).where(ReminderRow.status == "active")
                                  .values(next_fire_at=utcnow() - timedelta(seconds=1)))
    finally:
        await db.close()


async def test_a_reminder_set_before_a_restart_posts_once_after_it(telegram: FakeTelegram,
                                                                   database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=sets("in 1 hour"), tuning=TICKING, capabilities=REMINDERS):
        await telegram.user_says(bot.token, chat, alice, "remind me in an hour to call Anna")
        await telegram.wait_for(lambda: len(posts(telegram, chat)) == 1)
    await due_now(database_url)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=sets("in 1 hour"), tuning=TICKING, capabilities=REMINDERS):
        await telegram.wait_for(lambda: "⏰ Reminder: Call Anna" in posts(telegram, chat))
    assert posts(telegram, chat).count("⏰ Reminder: Call Anna") == 1
    assert len(await firings(database_url)) == 1


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_two_replicas_post_a_reminder_once(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with AsyncExitStack() as stack:
        replicas = [await stack.enter_async_context(running_gateway(
            telegram, [bot], database_url=database_url, redis_url=REDIS, model=sets("in 1 hour"), tuning=TICKING,
            capabilities=REMINDERS)) for _ in range(2)]
        await telegram.user_says(bot.token, chat, alice, "remind me to call Anna")
        await telegram.wait_for(lambda: len(posts(telegram, chat)) == 1)
        await due_now(database_url)
        await telegram.wait_for(lambda: "⏰ Reminder: Call Anna" in posts(telegram, chat))
    counted = [gateway.metrics.registry.get_sample_value("gateway_firings_total", {
        "bot": bot.name, "platform": "telegram", "kind": "reminder", "outcome": "fired"}) for gateway in replicas]
    assert posts(telegram, chat).count("⏰ Reminder: Call Anna") == 1
    assert len(await firings(database_url)) == 1 and sorted(counted) == [0, 1]


async def test_a_repeating_reminder_waits_for_approval(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, tuning=TICKING,
                               model=sets("now", "Stand-up", repeat="0 9 * * 1-5"), capabilities=REMINDERS):
        await telegram.user_says(bot.token, chat, alice, "remind me of the stand-up every weekday at nine")
        await telegram.wait_for(lambda: any("schedule_message" in p for p in posts(telegram, chat)))
    db = Database(database_url)
    try:
        async with db.session() as session:
            asked = list((await session.execute(select(ApprovalRow.tool_id))).scalars())
    finally:
        await db.close()
    assert asked == ["schedule_message"] and await reminders(database_url) == []


async def test_a_chat_reaches_only_its_own_reminders(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice, bob = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Bob")
    alices, bobs = telegram.private_chat(alice), telegram.private_chat(bob)
    model = calls_then_answers(("list_schedules", {}), ("cancel_schedule", {"reminder_id": 1}),
                               answer=lambda results: " | ".join(results))
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=sets("in 1 hour"),
                               tuning=TICKING, capabilities=REMINDERS):
        await telegram.user_says(bot.token, alices, alice, "remind me in an hour to call Anna")
        await telegram.wait_for(lambda: len(posts(telegram, alices)) == 1)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               tuning=TICKING, capabilities=REMINDERS):
        await telegram.user_says(bot.token, bobs, bob, "what is scheduled? cancel number 1")
        await telegram.wait_for(lambda: len(posts(telegram, bobs)) == 1)
    assert posts(telegram, bobs)[0].startswith("Nothing is scheduled in this chat. | This chat has no active "
                                               "reminder #1")
    assert [r.status for r in await reminders(database_url)] == ["active"]


def plans_then_runs(messages: list[ModelMessage]) -> tuple[str, dict[str, object], str] | str:
    """Sets a run for a second later; when that run comes, answers what it was asked to do."""
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(isinstance(part, ToolReturnPart) for part in last.parts):
        return "I will check then."
    asked = last_prompt(messages)
    if "is due now" in asked:
        return f"Checked: {asked.rsplit(chr(10), 1)[-1]} — green."
    return "schedule_run", {"when": "in 1 second", "instructions": "Check the build"}, "call-1"


async def test_a_scheduled_run_runs_the_agent_then_in_the_same_group(telegram: FakeTelegram,
                                                                     database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    room = telegram.group(-4001, "Ops")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=stepped(plans_then_runs), tuning=TICKING, capabilities=REMINDERS):
        await telegram.user_says(bot.token, room, alice, f"@{bot.username} check the build in a second")
        await telegram.wait_for(lambda: "Checked: Check the build — green." in posts(telegram, room))
    assert posts(telegram, room) == ["I will check then.", "Checked: Check the build — green."]


def notes_then_runs(messages: list[ModelMessage], info: AgentInfo) -> tuple[str, dict[str, object], str] | str:
    """Keeps a note, sets a run a second later; in that run, says whether the note's index is there."""
    if "is due now" in user_prompts(messages)[-1]:
        return "my notes are here" if "alice-index" in (info.instructions or "") else "not my notes"
    returned = [part for message in messages[-4:] if isinstance(message, ModelRequest)
                for part in message.parts if isinstance(part, ToolReturnPart)]
    if not returned:
        return "write_memory", {"path": "MEMORY.md", "content": "alice-index"}, "call-1"
    if len(returned) == 1:
        return "schedule_run", {"when": "in 1 second", "instructions": "Look at my notes"}, "call-2"
    return "Set."


async def test_a_reminder_run_in_a_dm_reaches_the_notes_of_who_set_it(telegram: FakeTelegram,
                                                                      database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=stepped_with_info(notes_then_runs), tuning=TICKING,
                               capabilities=[*REMINDERS, {"id": "memory_files", "approval": "never"}]):
        await telegram.user_says(bot.token, chat, alice, "note this, then look at my notes in a second")
        await telegram.wait_for(lambda: len(posts(telegram, chat)) == 2)
    assert posts(telegram, chat) == ["Set.", "my notes are here"]


async def test_forget_deletes_the_reminders_a_person_set_and_no_one_elses(telegram: FakeTelegram,
                                                                         sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice, bob = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Bob")
    alice_dm, bob_dm = telegram.private_chat(alice), telegram.private_chat(bob)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=sets("in 2 hours"),
                               tuning=TICKING, capabilities=REMINDERS):
        for person, chat in ((alice, alice_dm), (bob, bob_dm)):
            await telegram.user_says(bot.token, chat, person, "remind me in two hours to take my pills")
            await telegram.wait_for(lambda chat=chat: len(posts(telegram, chat)) == 1)
        await telegram.user_says(bot.token, alice_dm, alice, "forget")
        await telegram.wait_for(lambda: len(posts(telegram, alice_dm)) == 2)
        assert "It also deletes the 1 reminder(s) you set" in posts(telegram, alice_dm)[-1]
        await telegram.user_says(bot.token, alice_dm, alice, "forget yes")
        await telegram.wait_for(lambda: len(posts(telegram, alice_dm)) == 3)
    assert [(r.conversation_key.startswith(f"telegram:{bot.name}:{bob_dm['id']}:"), r.status)
            for r in await reminders(sqlite_url)] == [(True, "active")], "Alice's reminder is gone, Bob's stays"


def ticking() -> set[str]:
    return {task.get_name() for task in asyncio.all_tasks() if not task.done()} & {SCHEDULER}


@pytest.mark.parametrize("capabilities", [[], REMINDERS], ids=["nothing-to-fire", "reminders"])
async def test_only_a_gateway_with_something_to_fire_ticks(telegram: FakeTelegram, sqlite_url: str,
                                                           capabilities: list[dict[str, Any]]) -> None:
    """No schedule and no agent that sets reminders: nothing can fall due, so no replica reads the schedules every
    tick."""
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                               tuning=TICKING, capabilities=capabilities):
        await telegram.user_says(bot.token, telegram.private_chat(alice), alice, "hi")
        await telegram.wait_for(lambda: bool(telegram.bot_messages(1001)))
        assert ticking() == ({SCHEDULER} if capabilities else set())
