"""Answers on the platforms' own AI surfaces, at the network boundary: Slack streams a reply into its message
(`chat.startStream` / `appendStream` / `stopStream`) and falls back to `chat.update` on the same message when the
stream is refused or ends; a new assistant thread gets its title and suggested prompts; a Telegram private chat
sees drafts (`sendMessageDraft`) and then one message, nothing left behind by a crash, never a second answer."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

from gateway.pipeline.notices import SEND_CUT_OFF
from gateway.pipeline.runtime import CUT_OFF
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import FAST, TelegramBot, said_by
from tests.support.harness import running_gateway as telegram_gateway
from tests.support.records import inbox_rows, run_rows, until_replies_recorded
from tests.support.scripted import echoes, waits_for
from tests.support.slack_harness import SlackBot
from tests.support.slack_harness import running_gateway as slack_gateway

RETRY_SOON = replace(FAST, worker_lease=timedelta(seconds=1))


def methods(slack: FakeSlack, *names: str) -> list[dict]:
    return [call.params for call in slack.calls if call.method in names]


async def test_a_slack_answer_streams_into_one_message_for_the_person_asked(slack: FakeSlack,
                                                                          sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    ada = slack.add_user("ada", real_name="Ada")
    channel = slack.add_channel("general", members=[ada, bot.app])
    gate = asyncio.Event()
    async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=waits_for(gate, "done")):
        said = await slack.user_says(channel, ada, f"{bot.mention} plan?")
        await slack.wait_for(lambda: slack.texts(channel, by=bot.app, thread_ts=said["ts"]) == ["thinking "])
        gate.set()
        await slack.wait_for(lambda: slack.texts(channel, by=bot.app, thread_ts=said["ts"]) == ["thinking done"])
        await slack.wait_for(lambda: len(methods(slack, "chat.stopStream")) == 1)
    [started] = methods(slack, "chat.startStream")
    assert started["thread_ts"] == said["ts"]
    assert (started["recipient_user_id"], started["recipient_team_id"]) == (ada["id"], slack.team_id)
    assert methods(slack, "chat.postMessage", "chat.update") == []  # streamed, never posted or edited
    assert not slack.assistant.streaming


async def test_a_refused_stream_falls_back_to_a_placeholder_and_edits(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    ada = slack.add_user("ada", real_name="Ada")
    channel = slack.add_channel("general", members=[ada, bot.app])
    slack.assistant.refuse_streams("feature_not_enabled")
    async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        said = await slack.user_says(channel, ada, f"{bot.mention} hello")
        await slack.wait_for(lambda: slack.texts(channel, by=bot.app, thread_ts=said["ts"]) == ["echo: [Ada] hello"])
        second = await slack.user_says(channel, ada, f"{bot.mention} again")
        await slack.wait_for(lambda: slack.texts(channel, by=bot.app, thread_ts=second["ts"]) == [
            "echo: [Ada] again"])
    assert len(methods(slack, "chat.startStream")) == 1  # refused once, not asked again for every turn
    assert [p["text"] for p in methods(slack, "chat.postMessage")] == ["…", "…"]


async def test_a_stream_that_ends_mid_answer_is_finished_by_editing_the_same_message(slack: FakeSlack,
                                                                                     sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    ada = slack.add_user("ada", real_name="Ada")
    channel = slack.add_channel("general", members=[ada, bot.app])
    gate = asyncio.Event()
    async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=waits_for(gate, "done")):
        said = await slack.user_says(channel, ada, f"{bot.mention} plan?")
        await slack.wait_for(lambda: slack.texts(channel, by=bot.app, thread_ts=said["ts"]) == ["thinking "])
        [started] = [m for m in slack.messages(channel, thread_ts=said["ts"]) if m.get("user") == bot.user_id]
        slack.assistant.expire_stream(started["ts"])  # as Slack does after about five minutes
        gate.set()
        await slack.wait_for(lambda: slack.texts(channel, by=bot.app, thread_ts=said["ts"]) == ["thinking done"])
    [edited] = methods(slack, "chat.update")
    assert edited["ts"] == started["ts"]  # the same message, once
    assert methods(slack, "chat.postMessage") == []


async def test_a_new_assistant_thread_gets_the_bindings_title_and_suggested_prompts(slack: FakeSlack,
                                                                                    sqlite_url: str) -> None:
    prompts = [{"title": "Summarise", "message": "Summarise the last day of this channel"}]
    bot = SlackBot(app=slack.add_app("helper"), binding={"title": "Helper", "suggested_prompts": prompts})
    ada = slack.add_user("ada", real_name="Ada")
    async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        root = await slack.user_opens_assistant_thread(bot.app, ada)
        await slack.wait_for(lambda: len(slack.assistant.prompts) == 1)
    [(thread, shown)] = slack.assistant.prompts.items()
    assert thread[1] == root["ts"] and shown == prompts
    assert list(slack.assistant.titles.values()) == ["Helper"]


async def test_a_telegram_private_chat_sees_drafts_then_one_message(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    user = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(user)
    gate = asyncio.Event()
    async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                                model=waits_for(gate, "done")):
        await telegram.user_says(bot.token, chat, user, "hi")
        await telegram.wait_for(lambda: telegram.drafts.current(chat["id"]) == ["thinking"])
        assert said_by(telegram, chat, bot) == []  # a draft is not a message
        gate.set()
        await telegram.wait_for(lambda: said_by(telegram, chat, bot) == ["thinking done"])
    assert telegram.drafts.current(chat["id"]) == []  # the message ended the draft
    assert [c.method for c in telegram.calls if c.method in ("sendMessage", "editMessageText")] == ["sendMessage"]


async def test_a_crash_mid_draft_leaves_nothing_and_the_retry_answers_once(telegram: FakeTelegram,
                                                                          sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    user = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(user)
    async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                                model=waits_for(asyncio.Event(), "never said"), tuning=RETRY_SOON) as crashing:
        await telegram.user_says(bot.token, chat, user, "hello")
        await telegram.wait_for(lambda: telegram.drafts.current(chat["id"]) == ["thinking"])
        await crashing.abort()
    assert telegram.bot_messages(chat["id"]) == []
    async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                                tuning=RETRY_SOON):
        await telegram.wait_for(lambda: said_by(telegram, chat, bot) == ["echo: hello"])
    assert said_by(telegram, chat, bot) == ["echo: hello"]


async def test_a_retry_after_the_drafted_answer_was_being_sent_sends_no_second_answer(telegram: FakeTelegram,
                                                                                      sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    user = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(user)
    telegram.fail_next("sendMessage", retry_after=30)  # the answer's send is held: the process dies in it
    async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                                tuning=RETRY_SOON) as crashing:
        await telegram.user_says(bot.token, chat, user, "hello")
        await until_replies_recorded(sqlite_url, 1)  # recorded as sent, before the send
        await crashing.abort()
    async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                                tuning=RETRY_SOON):
        await until_all_done(sqlite_url)  # the retry ran
    # It does not send the answer again (it may be in the chat already: two answers), nor stay silent (it may not):
    # it says so, and the earlier attempt's run is closed rather than left running.
    assert said_by(telegram, chat, bot) == [SEND_CUT_OFF]
    assert [(run.status, run.error) for run in await run_rows(sqlite_url)] == [("failed", CUT_OFF)]


async def until_all_done(database_url: str) -> None:
    async with asyncio.timeout(20):
        while not all(row.status == "done" for row in await inbox_rows(database_url)):  # noqa: ASYNC110
            await asyncio.sleep(0.05)  # another process's database: nothing here to signal it
