"""A message typed to the Telegram bot reaches the agent, and the answer lands in that chat."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from storage.db import Database
from storage.models import MessageRow, RunRow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import echoes, scripted, user_prompts


def bot_texts(telegram: FakeTelegram, chat_id: int, thread_id: int | None = None) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat_id, thread_id=thread_id)]


async def test_reply_to_the_bot_and_addressed_command_are_answered(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    group = telegram.group(-2002, "Team")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=echoes()):
        await telegram.user_says(bot.token, group, alice, "/summary@helper_bot")
        await telegram.wait_for(lambda: len(bot_texts(telegram, group["id"])) == 1)
        answer = telegram.bot_messages(group["id"])[0]
        await telegram.user_says(bot.token, group, alice, "/summary")  # not addressed to this bot
        await telegram.user_says(bot.token, group, alice, "and more?", reply_to=answer)
        await telegram.wait_for(lambda: len(bot_texts(telegram, group["id"])) == 2)
    assert bot_texts(telegram, group["id"]) == ["echo: [Alice] /summary", "echo: [Alice] and more?"]


async def test_forum_topics_are_separate_conversations(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    forum = telegram.group(-3001, "Forum", forum=True)
    seen: list[list[str]] = []

    def remember(messages, _info) -> str:
        seen.append(user_prompts(messages))
        return f"answer {len(seen)}"

    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=scripted(remember)):
        await telegram.user_says(bot.token, forum, alice, "@helper_bot topic one", message_thread_id=11)
        await telegram.wait_for(lambda: len(bot_texts(telegram, forum["id"], thread_id=11)) == 1)
        await telegram.user_says(bot.token, forum, alice, "@helper_bot topic two", message_thread_id=22)
        await telegram.wait_for(lambda: len(bot_texts(telegram, forum["id"], thread_id=22)) == 1)
    assert seen[1] == ["[Alice] topic two"], "topic two must not see topic one's history"


async def test_history_window_keeps_the_newest_turns(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot(binding={"history_turns": 4}).register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    seen: list[list[str]] = []

    def remember(messages, _info) -> str:
        seen.append(user_prompts(messages))
        return f"answer {len(seen)}"

    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=scripted(remember)):
        for n in range(1, 6):
            await telegram.user_says(bot.token, chat, alice, f"message {n}")
            await telegram.wait_for(lambda n=n: bot_texts(telegram, chat["id"])[-1:] == [f"answer {n}"])
    # 4 turns of history = the two newest exchanges, then the new prompt
    assert seen[-1] == ["message 3", "message 4", "message 5"]


async def test_turns_and_runs_are_recorded_with_their_speaker(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice", username="alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=echoes()):
        await telegram.user_says(bot.token, chat, alice, "remember me")
        await telegram.wait_for(lambda: bot_texts(telegram, chat["id"]) == ["echo: remember me"])
    db = Database(database_url)
    try:
        async with db.session() as session:
            messages = (await session.execute(select(MessageRow).order_by(MessageRow.id))).scalars().all()
            runs = (await session.execute(select(RunRow))).scalars().all()
    finally:
        await db.close()
    assert [(m.role, m.speaker_name, m.text) for m in messages] == [
        ("user", "Alice", "remember me"), ("assistant", "assistant", "echo: remember me")]
    assert [(r.status, r.requests, r.model) for r in runs] == [("answered", 1, "function:scripted")]
    assert runs[0].output_tokens > 0


@pytest.mark.parametrize("transport", ["polling", "webhook"])
async def test_both_transports_deliver(telegram: FakeTelegram, sqlite_url: str, transport: str) -> None:
    bot = TelegramBot(transport=transport).register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=echoes()):
        await telegram.user_says(bot.token, chat, alice, f"via {transport}")
        await telegram.wait_for(lambda: bot_texts(telegram, chat["id"]) == [f"echo: via {transport}"])
    if transport == "webhook":
        assert [status for status, _ in telegram.webhook_responses] == [200]
