"""👍 / 👎 on answers, at the network boundary: the buttons under the answer on each platform (Slack's feedback block,
Telegram's inline keyboard, Mattermost's attachment actions), a click stored with its run and counted in `/metrics`,
a person's second click replacing their first, a forged click refused with nothing stored; and the 👀 reaction on a
person's message as the first sign on Telegram and Slack, taken away once it is answered."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import select

from storage.db import Database
from storage.models import RunFeedbackRow, RunRow
from tests.e2e.test_metrics import samples, scrape
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway, said_by
from tests.support.mattermost_harness import MattermostBot
from tests.support.mattermost_harness import running_gateway as mattermost_gateway
from tests.support.scripted import echoes, waits_for
from tests.support.slack_harness import SlackBot
from tests.support.slack_harness import running_gateway as slack_gateway

FEEDBACK = {"feedback": True}


async def ratings(database_url: str) -> list[tuple[int, str, str]]:
    """(run id, voter, rating) of every stored rating."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            rows = (await session.execute(select(RunFeedbackRow.run_id, RunFeedbackRow.voter_id,
                                                 RunFeedbackRow.rating))).all()
    finally:
        await db.close()
    return [(row.run_id, row.voter_id, row.rating) for row in rows]


async def answered_runs(database_url: str) -> list[int]:
    """The runs' ids, oldest first (a run's row is opened before its answer is posted)."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(RunRow.id).order_by(RunRow.id))).scalars())
    finally:
        await db.close()


async def until_rated(database_url: str, count: int, rating: str | None = None) -> list[tuple[int, str, str]]:
    """The stored ratings once there are `count` (the last of them `rating`, when given)."""
    while True:
        found = await ratings(database_url)
        if len(found) == count and (rating is None or found[-1][2] == rating):
            return found
        await asyncio.sleep(0.05)


def counted(text: str, bot: str, rating: str) -> float:
    return samples(text)[("gateway_answer_feedback_total",
                          frozenset({("bot", bot), ("agent", "assistant"), ("rating", rating)}))]


def keyboard(message: dict[str, Any]) -> list[str]:
    return [button["callback_data"] for row in message.get("reply_markup", {}).get("inline_keyboard", [])
            for button in row]


async def test_telegram_a_thumbs_up_is_stored_with_the_run_and_a_second_click_replaces_it(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot(binding=FEEDBACK).register(telegram)
    ada = telegram.add_user(101, "Ada", username="ada")
    chat = telegram.private_chat(ada)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None,
                               model=echoes()) as gateway:
        await telegram.user_says(bot.token, chat, ada, "hello")
        await telegram.wait_for(lambda: said_by(telegram, chat, bot) == ["echo: hello"])
        [answer] = telegram.bot_messages(chat["id"])
        [run_id] = await answered_runs(database_url)
        assert keyboard(answer) == [f"fu:{run_id}", f"fd:{run_id}"]  # on the one message sent after the drafts
        await telegram.user_clicks(bot.token, answer, ada, f"fu:{run_id}")
        assert await until_rated(database_url, 1) == [(run_id, "telegram::101", "good")]
        await telegram.user_clicks(bot.token, answer, ada, f"fd:{run_id}")
        assert await until_rated(database_url, 1, "bad") == [(run_id, "telegram::101", "bad")]
        text = await scrape(gateway.url)
    assert (counted(text, bot.name, "good"), counted(text, bot.name, "bad")) == (1, 1)
    assert said_by(telegram, chat, bot) == ["echo: hello"]  # a click never starts a turn
    assert [c.method for c in telegram.calls].count("answerCallbackQuery") == 2


async def test_telegram_a_click_naming_another_chats_run_is_refused_and_stores_nothing(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot(binding=FEEDBACK).register(telegram)
    ada, eve = telegram.add_user(101, "Ada", username="ada"), telegram.add_user(102, "Eve", username="eve")
    ada_chat, eve_chat = telegram.private_chat(ada), telegram.private_chat(eve)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await telegram.user_says(bot.token, ada_chat, ada, "secret plan")
        await telegram.wait_for(lambda: said_by(telegram, ada_chat, bot) == ["echo: secret plan"])
        [ada_run] = await answered_runs(sqlite_url)
        await telegram.user_says(bot.token, eve_chat, eve, "hi")
        await telegram.wait_for(lambda: said_by(telegram, eve_chat, bot) == ["echo: hi"])
        [eve_answer] = telegram.bot_messages(eve_chat["id"])
        await telegram.user_clicks(bot.token, eve_answer, eve, f"fd:{ada_run}")  # forged data: Ada's run
        await telegram.wait_for(lambda: any(c.method == "answerCallbackQuery" for c in telegram.calls))
    [refusal] = [c.params for c in telegram.calls if c.method == "answerCallbackQuery"]
    assert refusal["show_alert"] is True and "not one of this conversation's" in refusal["text"]
    assert await ratings(sqlite_url) == []


async def test_telegram_a_group_message_gets_eyes_until_it_is_answered(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot(binding={"reaction": True, **FEEDBACK}).register(telegram)
    ada = telegram.add_user(101, "Ada", username="ada")
    group = telegram.group(-100, "Team")
    gate = asyncio.Event()
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=waits_for(gate, "done")):
        said = await telegram.user_says(bot.token, group, ada, f"@{bot.username} plan?")
        await telegram.wait_for(lambda: telegram.reactions.on(group["id"], said["message_id"]) == "👀")
        gate.set()
        await telegram.wait_for(lambda: said_by(telegram, group, bot) == ["thinking done"]
                                and telegram.reactions.on(group["id"], said["message_id"]) == "")
        [answer] = telegram.bot_messages(group["id"])
    assert keyboard(answer)[0].startswith("fu:")  # the Stop button gave way to the feedback buttons
    assert [emoji for _, message_id, emoji in telegram.reactions.changes if message_id == said["message_id"]] == [
        "👀", ""]


async def test_telegram_no_reaction_or_buttons_unless_the_binding_asks(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    ada = telegram.add_user(101, "Ada", username="ada")
    group = telegram.group(-100, "Team")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        await telegram.user_says(bot.token, group, ada, f"@{bot.username} hi")
        await telegram.wait_for(lambda: said_by(telegram, group, bot) == ["echo: [Ada] hi"])
    [answer] = telegram.bot_messages(group["id"])
    assert keyboard(answer) == [] and telegram.reactions.changes == []


def slack_eyes(slack: FakeSlack, channel: dict[str, Any], ts: str, bot: SlackBot) -> bool:
    message = next(m for m in slack.messages(channel) if m["ts"] == ts)
    return any(r["name"] == "eyes" and bot.user_id in r["users"] for r in message.get("reactions", []))


async def test_slack_a_dm_waiting_for_its_turn_and_a_channel_message_get_eyes_until_answered(
        slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"), binding={"reaction": True})
    ada, bob = slack.add_user("ada", real_name="Ada"), slack.add_user("bob", real_name="Bob")
    ada_dm, bob_dm = slack.open_dm(ada, bot.app), slack.open_dm(bob, bot.app)
    channel = slack.add_channel("general", members=[ada, bot.app])
    gate, started = asyncio.Event(), asyncio.Event()
    async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None,
                             model=waits_for(gate, "done", started=started)):
        first = await slack.user_says(ada_dm, ada, "plan the week")
        await started.wait()
        waiting = await slack.user_says(bob_dm, bob, "and mine?")  # a turn runs: this one waits for its own
        mention = await slack.user_says(channel, ada, f"{bot.mention} plan?")
        await slack.wait_for(lambda: slack_eyes(slack, bob_dm, waiting["ts"], bot)
                             and slack_eyes(slack, channel, mention["ts"], bot))
        gate.set()
        await slack.wait_for(lambda: "thinking done" in slack.texts(bob_dm, by=bot.app)
                             and "thinking done" in slack.texts(channel, by=bot.app, thread_ts=mention["ts"])
                             and not slack_eyes(slack, bob_dm, waiting["ts"], bot)
                             and not slack_eyes(slack, channel, mention["ts"], bot))
    added = [c.params for c in slack.calls if c.method == "reactions.add"]
    assert sorted(p["timestamp"] for p in added) == sorted([waiting["ts"], mention["ts"]]), \
        "a DM answered at once shows its answer, not a reaction"
    assert {p["name"] for p in added} == {"eyes"} and first["ts"] not in {p["timestamp"] for p in added}


async def test_slack_the_feedback_block_ends_the_stream_and_a_thumbs_up_is_counted(slack: FakeSlack,
                                                                                  database_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"), binding=FEEDBACK)
    ada = slack.add_user("ada", real_name="Ada")
    channel = slack.add_channel("general", members=[ada, bot.app])
    async with slack_gateway(slack, [bot], database_url=database_url, redis_url=None, model=echoes()) as gateway:
        said = await slack.user_says(channel, ada, f"{bot.mention} hello")
        await slack.wait_for(lambda: any(m.get("blocks") for m in slack.messages(channel, thread_ts=said["ts"])))
        [answer] = [m for m in slack.messages(channel, thread_ts=said["ts"]) if m.get("user") == bot.user_id]
        await slack.user_clicks(bot.app, answer, ada, "feedback", positive=True)
        [(run_id, voter, rating)] = await until_rated(database_url, 1)
        text = await scrape(gateway.url)
    [stopped] = [c.params for c in slack.calls if c.method == "chat.stopStream"]
    assert stopped["blocks"][0]["type"] == "context_actions"  # Slack's feedback block, at the streamed answer's foot
    assert (voter, rating) == (f"slack:{slack.team_id}:{ada['id']}", "good")
    assert run_id == (await answered_runs(database_url))[0]
    assert counted(text, bot.name, "good") == 1
    assert [e["text"] for e in slack.ephemeral] == ["Thanks: noted 👍."]


async def test_slack_a_feedback_click_with_a_forged_signature_stores_nothing(slack: FakeSlack,
                                                                             sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"), binding=FEEDBACK, transport="http")
    ada = slack.add_user("ada", real_name="Ada")
    channel = slack.add_channel("general", members=[ada, bot.app])
    async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        said = await slack.user_says(channel, ada, f"{bot.mention} hello")
        await slack.wait_for(lambda: any(m.get("blocks") for m in slack.messages(channel, thread_ts=said["ts"])))
        [answer] = [m for m in slack.messages(channel, thread_ts=said["ts"]) if m.get("user") == bot.user_id]
        body = urlencode({"payload": json.dumps(slack.click_payload(bot.app, answer, ada, "feedback",
                                                                    positive=False))}).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded",
                   **slack.signed_headers(bot.app, body, secret="not-the-signing-secret")}
        status, _ = await slack.post_to_app(bot.app, body, headers, url=bot.app.interactivity_url)
    assert status == 403
    assert await ratings(sqlite_url) == []


async def test_mattermost_a_thumbs_up_is_stored_and_a_forged_context_is_refused(mattermost: FakeMattermost,
                                                                                database_url: str) -> None:
    bot = MattermostBot(binding=FEEDBACK).register(mattermost)
    alice = mattermost.add_user("alice")
    room = mattermost.direct_channel(alice, bot.user)
    async with mattermost_gateway(mattermost, [bot], database_url=database_url, public=True,
                                  model=echoes()) as gateway:
        await mattermost.user_posts(room, alice, "hello")

        def answer() -> dict[str, Any] | None:
            return next((p for p in mattermost.posts(room) if p["user_id"] == bot.user["id"]
                         and p.get("props", {}).get("attachments")), None)
        await mattermost.wait_for(lambda: answer() is not None)
        post = answer()
        assert post is not None and post["message"] == "echo: hello"
        forged = {**mattermost.button_context(post, "thumbsup"), "approval_id": "424242"}  # another run
        status, _ = await mattermost.click(post, alice, "thumbsup", context=forged)
        assert status in (401, 403) and await ratings(database_url) == []
        await mattermost.click(post, alice, "thumbsup")
        [(run_id, voter, rating)] = await until_rated(database_url, 1)
        text = await scrape(gateway.url)
    assert run_id == (await answered_runs(database_url))[0] and rating == "good"
    assert voter.startswith("mattermost:") and voter.endswith(alice["id"])
    assert counted(text, bot.name, "good") == 1
