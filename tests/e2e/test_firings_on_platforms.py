"""Runs that start without a message on Slack and Mattermost: "remind me" posts once in the thread it was asked
in, and an operator's schedule posts in the channel its `chat` names."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.support import mattermost_harness, slack_harness
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.harness import FAST
from tests.support.mattermost_harness import MattermostBot
from tests.support.scripted import calls_then_answers, echoes
from tests.support.slack_harness import SlackBot

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
"""What is shown here is each platform's post; both databases are shown on Telegram (test_schedules, test_reminders)."""

TICKING = replace(FAST, schedule_tick=0.2)
REMINDERS = [{"id": "reminders"}]
SETS = calls_then_answers(("schedule_message", {"when": "in 1 second", "text": "Call Anna"}))
EVERY_SECOND = "* * * * * *"


async def test_remind_me_in_a_slack_thread_posts_once_in_that_thread(slack: FakeSlack, database_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    room = slack.add_channel("ops", members=[alice, bot.app])
    async with slack_harness.running_gateway(slack, [bot], database_url=database_url, redis_url=None, model=SETS,
                                             tuning=TICKING, capabilities=REMINDERS):
        asked = await slack.user_says(room, alice, f"{bot.mention} remind me in a second to call Anna")
        thread = asked["ts"]
        await slack.wait_for(lambda: "⏰ Reminder for Alice: Call Anna" in slack.texts(room, by=bot.app,
                                                                                       thread_ts=thread))
        await slack.wait_for(lambda: len(slack.texts(room, by=bot.app, thread_ts=thread)) == 2)
    said = slack.texts(room, by=bot.app, thread_ts=thread)
    assert said[0].startswith("done: Reminder #1") and said.count("⏰ Reminder for Alice: Call Anna") == 1


async def test_a_schedule_posts_in_the_slack_channel_it_names(slack: FakeSlack, database_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    room = slack.add_channel("ops", members=[bot.app])
    top = {"schedules": [{"name": "beat", "cron": EVERY_SECOND, "bot": bot.name, "chat": room["id"],
                          "text": "Stand-up time"}]}
    async with slack_harness.running_gateway(slack, [bot], database_url=database_url, redis_url=None,
                                             model=echoes(), tuning=TICKING, top=top):
        await slack.wait_for(lambda: len(slack.texts(room, by=bot.app)) >= 2)
    assert set(slack.texts(room, by=bot.app)) == {"Stand-up time"}


async def test_remind_me_on_mattermost_posts_once_in_that_thread(mattermost: FakeMattermost,
                                                                 database_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice")
    team = mattermost.add_team("acme")
    room = mattermost.add_channel(team, "ops", members=[bot.user, alice])
    async with mattermost_harness.running_gateway(mattermost, [bot], database_url=database_url, model=SETS,
                                                  tuning=TICKING, capabilities=REMINDERS):
        asked = await mattermost.user_posts(room, alice, f"@{bot.user['username']} remind me in a second")
        def said() -> list[str]:
            return [p["message"] for p in mattermost.posts(room, user=bot.user, thread=asked["id"])]
        await mattermost.wait_for(lambda: any(text.startswith("⏰ Reminder for") for text in said()))
        await mattermost.wait_for(lambda: len(said()) == 2)
    assert said()[0].startswith("done: Reminder #1") and said()[1].endswith(": Call Anna")


async def test_a_schedule_posts_in_the_mattermost_channel_it_names(mattermost: FakeMattermost,
                                                                   database_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    team = mattermost.add_team("acme")
    room = mattermost.add_channel(team, "ops", members=[bot.user])
    top = {"schedules": [{"name": "beat", "cron": EVERY_SECOND, "bot": bot.name, "chat": room["id"],
                          "text": "Stand-up time"}]}
    async with mattermost_harness.running_gateway(mattermost, [bot], database_url=database_url, model=echoes(),
                                                  tuning=TICKING, top=top):
        await mattermost.wait_for(lambda: len(mattermost.posts(room, user=bot.user)) >= 2)
    assert {p["message"] for p in mattermost.posts(room, user=bot.user)} == {"Stand-up time"}
