"""A turn cut short between posting its placeholder and recording it leaves no "…" behind where the platform
lets the retry find it: the process dies waiting for the post's answer, and the next attempt answers in it. On
Telegram, which cannot find it, the first post waits for text and is recorded at once: the retry answers in it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

import pytest

from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import FAST, TelegramBot, said_by
from tests.support.harness import running_gateway as telegram_gateway
from tests.support.mattermost_harness import MattermostBot
from tests.support.mattermost_harness import running_gateway as mattermost_gateway
from tests.support.records import until_replies_recorded
from tests.support.scripted import echoes, waits_for
from tests.support.slack_harness import SlackBot
from tests.support.slack_harness import running_gateway as slack_gateway

RETRY_SOON = replace(FAST, worker_lease=timedelta(seconds=1))


async def test_mattermost_retry_answers_in_the_placeholder_its_crashed_attempt_left(
        mattermost: FakeMattermost, sqlite_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice")
    channel = mattermost.add_channel(mattermost.add_team("acme"), "town-square", members=[bot.user, alice])
    mattermost.answer_never("create_post")
    async with mattermost_gateway(mattermost, [bot], database_url=sqlite_url, model=echoes(),
                                  tuning=RETRY_SOON) as crashing:
        said = await mattermost.user_posts(channel, alice, f"@{bot.username} hello")
        await mattermost.wait_for(lambda: [p["message"] for p in mattermost.posts(channel, user=bot.user)] == ["…"])
        await crashing.abort()
    async with mattermost_gateway(mattermost, [bot], database_url=sqlite_url, model=echoes(), tuning=RETRY_SOON):
        await mattermost.wait_for(lambda: any(p["message"].startswith("echo:")
                                              for p in mattermost.posts(channel, user=bot.user)))
    assert [p["message"] for p in mattermost.posts(channel, user=bot.user, thread=said["id"])] == [
        "echo: [alice] hello"]
    placeholders = [c.body for c in mattermost.route_calls("create_post") if c.user_id == bot.user["id"]]
    assert [len(body["pending_post_id"]) for body in placeholders] == [26]  # a repeat would return this post


@pytest.mark.parametrize("where", ["dm", "channel"])
async def test_slack_retry_answers_in_the_placeholder_its_crashed_attempt_left(
        slack: FakeSlack, sqlite_url: str, where: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    room = slack.open_dm(alice, bot.app) if where == "dm" else slack.add_channel("general", members=[alice, bot.app])
    # In a thread the reply is a stream, opened empty; a top-level DM's is a "…" post.
    slack.answer_never("chat.postMessage" if where == "dm" else "chat.startStream")
    async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                             tuning=RETRY_SOON) as crashing:
        said = await slack.user_says(room, alice, "hello" if where == "dm" else f"{bot.mention} hello")
        thread = None if where == "dm" else said["ts"]
        await slack.wait_for(lambda: slack.texts(room, by=bot.app, thread_ts=thread) == [
            "…" if where == "dm" else ""])
        await crashing.abort()
    async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                             tuning=RETRY_SOON):
        await slack.wait_for(lambda: any(t.startswith("echo:") for t in slack.texts(room, by=bot.app,
                                                                                     thread_ts=thread)))
    assert slack.texts(room, by=bot.app, thread_ts=thread) == [
        "echo: hello" if where == "dm" else "echo: [Alice] hello"]


async def test_telegram_retry_answers_in_the_first_text_its_crashed_attempt_posted(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.group(-2002, "Team")  # a group posts its first text; a DM drafts it
    async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                                model=waits_for(asyncio.Event(), "never said"), tuning=RETRY_SOON) as crashing:
        await telegram.user_says(bot.token, chat, alice, f"@{bot.username} hello")
        await telegram.wait_for(lambda: len(said_by(telegram, chat, bot)) == 1)  # the first text, nothing before it
        await until_replies_recorded(sqlite_url, 1)
        await crashing.abort()
    [first] = telegram.bot_messages(chat["id"])
    assert first["text"].strip() == "thinking"
    async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                                tuning=RETRY_SOON):
        await telegram.wait_for(lambda: said_by(telegram, chat, bot) == ["echo: [Alice] hello"])
    assert [m["message_id"] for m in telegram.bot_messages(chat["id"])] == [first["message_id"]]
    assert not any(c.method == "sendMessage" and c.params.get("text") == "…" for c in telegram.calls)
