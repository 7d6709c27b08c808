"""Delivery guarantees on Telegram: verified webhooks, dedupe, retries after a crash, limits honoured."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import replace
from datetime import timedelta

import httpx
import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.models.function import FunctionModel
from sqlalchemy import func, select

from storage.db import Database
from storage.models import InboxRow, RunRow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import FAST, TelegramBot, running_gateway
from tests.support.records import inbox_rows
from tests.support.scripted import answers, echoes, fails, waits_for


def bot_texts(telegram: FakeTelegram, chat_id: int) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat_id)]


def calls(telegram: FakeTelegram, method: str) -> list[dict]:
    return [c.params for c in telegram.calls if c.method == method]


def a_message_update(update_id: int, chat: dict, user: dict, text: str) -> dict:
    return {"update_id": update_id, "message": {"message_id": 70 + update_id, "date": int(time.time()),
                                                "chat": chat, "from": user, "text": text}}


async def test_webhook_for_an_unknown_bot_is_refused(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot(transport="webhook").register(telegram)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=echoes()) as gateway, httpx.AsyncClient() as client:
        response = await client.post(f"{gateway.url}/telegram/nobody/webhook", json={"update_id": 1})
    assert (response.status_code, response.json()["error"]) == (404, "unknown telegram bot 'nobody'")


async def test_webhook_is_registered_with_a_generated_secret(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot(transport="webhook").register(telegram)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=echoes()) as gateway:
        [registration] = calls(telegram, "setWebhook")
    assert registration["url"] == f"{gateway.url}/telegram/{bot.name}/webhook"
    assert len(registration["secret_token"]) >= 32


async def test_malformed_update_is_logged_and_kept_and_the_worker_keeps_running(
        telegram: FakeTelegram, database_url: str, caplog: pytest.LogCaptureFixture) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=echoes()):
        await telegram.push_update(bot.token, {"update_id": 900, "message": {"message_id": "not-a-message"}})
        await telegram.user_says(bot.token, chat, alice, "still there?")
        await telegram.wait_for(lambda: bot_texts(telegram, chat["id"]) == ["echo: still there?"])
    assert any("unreadable payload" in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)
    rows = await inbox_rows(database_url)
    assert sorted(r.status for r in rows) == ["done", "rejected"]


async def test_the_same_update_delivered_twice_is_answered_once(telegram: FakeTelegram, database_url: str,
                                                                redis_url: str | None) -> None:
    bot = TelegramBot(transport="webhook").register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    update = a_message_update(5, chat, alice, "only once please")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=redis_url, model=echoes()):
        await telegram.push_update(bot.token, update)
        await telegram.push_update(bot.token, update)
        await telegram.wait_for(lambda: bot_texts(telegram, chat["id"]) == ["echo: only once please"])
        await telegram.user_says(bot.token, chat, alice, "next")
        await telegram.wait_for(lambda: len(bot_texts(telegram, chat["id"])) == 2)
    assert bot_texts(telegram, chat["id"]) == ["echo: only once please", "echo: next"]
    assert [status for status, _ in telegram.webhook_responses] == [200, 200, 200]


async def test_a_turn_cut_by_a_crash_is_answered_once_after_restart(telegram: FakeTelegram,
                                                                    database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    never, model_called = asyncio.Event(), asyncio.Event()
    crashing = replace(FAST, worker_lease=timedelta(seconds=1))
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=waits_for(never, "lost", started=model_called), tuning=crashing) as first:
        await telegram.user_says(bot.token, chat, alice, "are you there?")
        async with asyncio.timeout(5):
            await model_called.wait()
        await first.abort()  # the process dies mid-turn: no cleanup, the lease is left to expire
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=answers("yes, here")):
        await telegram.wait_for(lambda: bot_texts(telegram, chat["id"]) == ["yes, here"])
    assert len(calls(telegram, "sendMessage")) == 1, "the retry edits the first placeholder"
    db = Database(database_url)
    try:
        async with db.session() as session:
            statuses = (await session.execute(select(RunRow.status).order_by(RunRow.id))).scalars().all()
            attempts = (await session.execute(select(func.max(InboxRow.attempts)))).scalar()
    finally:
        await db.close()
    # the crashed attempt's run is closed by the retry ("cut off"), not left running
    assert (list(statuses), attempts) == (["failed", "answered"], 2)


async def test_queued_messages_survive_a_clean_shutdown(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.group(-2002, "Team")  # a group's reply is a message edited live; a DM drafts it
    gate = asyncio.Event()
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=waits_for(gate, "first answer")) as first:
        await telegram.user_says(bot.token, chat, alice, f"@{bot.username} one")
        await telegram.wait_for(lambda: len(bot_texts(telegram, chat["id"])) == 1)  # its first text
        await telegram.user_says(bot.token, chat, alice, f"@{bot.username} two")
        await telegram.wait_for(lambda: len(calls(telegram, "getUpdates")) >= 3)
        stopping = asyncio.create_task(first.stop())
        gate.set()  # the running turn finishes within the grace period
        await stopping
    assert bot_texts(telegram, chat["id"]) == ["thinking first answer"]
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await telegram.wait_for(lambda: len(bot_texts(telegram, chat["id"])) == 2)
    assert bot_texts(telegram, chat["id"]) == ["thinking first answer", "echo: [Alice] two"]


async def test_429_retry_after_is_honoured(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    telegram.fail_next("sendMessage", retry_after=1)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await telegram.user_says(bot.token, chat, alice, "hi")
        await telegram.wait_for(lambda: bot_texts(telegram, chat["id"]) == ["echo: hi"])
    refused, accepted = [c for c in telegram.calls if c.method == "sendMessage"][:2]
    assert accepted.at - refused.at >= 1.0


async def test_model_failure_gets_a_short_reply_instead_of_silence(telegram: FakeTelegram,
                                                                   database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    error = ModelHTTPError(status_code=503, model_name="scripted", body="overloaded")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=fails(error)):
        await telegram.user_says(bot.token, chat, alice, "hi")
        await telegram.wait_for(lambda: len(bot_texts(telegram, chat["id"])) == 1)
    [text] = bot_texts(telegram, chat["id"])
    assert text.startswith("Sorry, the model could not answer right now")
    db = Database(database_url)
    try:
        async with db.session() as session:
            run = (await session.execute(select(RunRow))).scalar_one()
    finally:
        await db.close()
    assert run.status == "failed" and "503" in (run.error or "")


SHOWN = ("sendMessage", "editMessageText")
"""How a group's reply shows its text: the first post, then edits."""


async def test_live_edits_coalesce_a_burst_of_deltas_into_one_edit_per_interval(telegram: FakeTelegram,
                                                                              sqlite_url: str) -> None:
    """Two bursts of 20 deltas, each streamed at once; the second waits until the first reached the chat."""
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.group(-2002, "Team")  # a group's reply is a message edited live; a DM drafts it
    bursts, burst = 2, 20

    def shown(word: str) -> bool:
        return any(word in c.params.get("text", "") for c in telegram.calls if c.method in SHOWN)

    async def bursty_stream(_messages, _info):
        for start in range(0, bursts * burst, burst):
            for n in range(start, start + burst):
                yield f"part{n} "
            await telegram.wait_for(lambda n=n: shown(f"part{n}"))

    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=FunctionModel(stream_function=bursty_stream)) as gateway:
        interval = gateway.adapters[bot.name].limits.edit_interval
        await telegram.user_says(bot.token, chat, alice, f"@{bot.username} stream please")
        await telegram.wait_for(lambda: bot_texts(telegram, chat["id"])[-1:] == [
            " ".join(f"part{n}" for n in range(bursts * burst))], timeout=10)
    shows = [c.at for c in telegram.calls if c.method in SHOWN]
    # The first text is the first post, an interval after the turn began; a burst straddling a due edit shows in
    # two; the last edit may be the final text alone.
    assert bursts <= len(shows) <= 2 * bursts + 1, f"{len(shows)} posts and edits for {bursts * burst} deltas"
    previews = shows[:-1]  # the final text is written at once, unthrottled
    assert all(later - earlier >= interval / 2 for earlier, later in itertools.pairwise(previews))


@pytest.mark.parametrize("allow", [["@alice"], [1001]], ids=["handle", "bare-numeric-id"])
async def test_allowlist_refuses_strangers(telegram: FakeTelegram, sqlite_url: str, allow: list[object]) -> None:
    """By handle, or by a bare numeric id as examples/gateway.yaml suggests (YAML reads `1001` as a number)."""
    bot = TelegramBot(binding={"access": "allowlist", "allow": allow}).register(telegram)
    alice = telegram.add_user(1001, "Alice", username="alice")
    mallory = telegram.add_user(1002, "Mallory", username="mallory")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await telegram.user_says(bot.token, telegram.private_chat(mallory), mallory, "let me in")
        await telegram.user_says(bot.token, telegram.private_chat(alice), alice, "hi")
        await telegram.wait_for(lambda: bot_texts(telegram, 1001) == ["echo: hi"]
                                and len(bot_texts(telegram, 1002)) == 1)
    assert bot_texts(telegram, 1002) == ["Sorry, this bot only answers people on its allowlist."]


async def test_rate_limit_slows_a_flooding_speaker(telegram: FakeTelegram, sqlite_url: str,
                                                   redis_url: str | None) -> None:
    bot = TelegramBot(binding={"rate_limit": {"messages": 2, "per_seconds": 60}}).register(telegram)
    alice, bob = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Bob")
    group = telegram.group(-2001, "Team")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=redis_url, model=echoes()):
        for n in range(4):
            await telegram.user_says(bot.token, group, alice, f"@helper_bot m{n}")
        # One conversation's messages are handled in order: Bob's answer comes after Alice's fourth is done.
        await telegram.user_says(bot.token, group, bob, "@helper_bot and me?")
        await telegram.wait_for(lambda: bot_texts(telegram, group["id"])[-1:] == ["echo: [Bob] and me?"])
    texts = bot_texts(telegram, group["id"])
    assert texts[:2] == ["echo: [Alice] m0", "echo: [Alice] m1"]
    assert texts[2].startswith("You're sending messages faster")
    assert len(texts) == 4, "the fourth message was not answered"


async def test_tokens_and_webhook_secrets_never_reach_the_log(telegram: FakeTelegram, sqlite_url: str,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    bot = TelegramBot(transport="webhook").register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await telegram.user_says(bot.token, chat, alice, "hi")
        await telegram.wait_for(lambda: bot_texts(telegram, chat["id"]) == ["echo: hi"])
        [registration] = calls(telegram, "setWebhook")
    logged = caplog.text
    assert bot.token.split(":")[1] not in logged
    assert registration["secret_token"] not in logged
