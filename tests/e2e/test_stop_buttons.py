"""The Stop button on Slack and Mattermost live replies: shown while the model is asked, verified like an approval
click, gone once the turn ends; a Slack native stream takes no blocks, so there the word `stop` stops the turn."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.e2e.test_stop_and_steer import STOP_WITHIN, held_first
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.mattermost_harness import MattermostBot
from tests.support.mattermost_harness import running_gateway as running_mattermost
from tests.support.slack_harness import SlackBot
from tests.support.slack_harness import running_gateway as running_slack

SLACK_STOP = "approval:stop"


def slack_stop_buttons(slack: FakeSlack, channel: dict[str, Any], bot: SlackBot,
                       thread_ts: str | None = None) -> list[dict[str, Any]]:
    return [m for m in slack.messages(channel, thread_ts=thread_ts) if m.get("user") == bot.user_id
            and any(e.get("action_id") == SLACK_STOP for b in m.get("blocks") or [] for e in b.get("elements") or [])]


def slack_message(slack: FakeSlack, channel: dict[str, Any], ts: str) -> dict[str, Any]:
    [found] = [m for m in slack.messages(channel) + [r for m in slack.messages(channel)
                                                     for r in slack.messages(channel, thread_ts=m["ts"])]
               if m["ts"] == ts]
    return found


def mattermost_stop_buttons(mattermost: FakeMattermost, room: dict[str, Any],
                            bot: MattermostBot) -> list[dict[str, Any]]:
    return [p for p in mattermost.posts(room, user=bot.user)
            if any(a.get("id") == "stop" for att in p["props"].get("attachments", []) for a in att.get("actions", []))]


def mattermost_post(mattermost: FakeMattermost, room: dict[str, Any], post_id: str) -> dict[str, Any]:
    [found] = [p for p in mattermost.posts(room) if p["id"] == post_id]
    return found


async def test_slack_the_stop_button_ends_the_turn_and_goes_with_it(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice, mallory = slack.add_user("alice", real_name="Alice"), slack.add_user("mallory", real_name="Mallory")
    dm = slack.open_dm(alice, bot.app)
    async with running_slack(slack, [bot], database_url=sqlite_url, redis_url=None, model=held_first(asyncio.Event())):
        await slack.user_says(dm, alice, "write me a long story")
        await slack.wait_for(lambda: len(slack_stop_buttons(slack, dm, bot)) == 1)
        [live] = slack_stop_buttons(slack, dm, bot)
        assert live["text"].startswith("thinking")
        await slack.user_clicks(bot.app, live, mallory, SLACK_STOP)  # not hers to stop
        await slack.user_clicks(bot.app, live, alice, SLACK_STOP)
        await slack.wait_for(lambda: "Stopped" in slack_message(slack, dm, live["ts"])["text"], timeout=STOP_WITHIN)
        stopped = slack_message(slack, dm, live["ts"])
        assert stopped["text"].startswith("thinking") and "Stopped by Alice" in stopped["text"]
        assert not stopped.get("blocks")


async def test_slack_a_native_stream_shows_no_button_and_the_word_stops_it(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    room = slack.add_channel("ops", members=[alice, bot.app])
    async with running_slack(slack, [bot], database_url=sqlite_url, redis_url=None, model=held_first(asyncio.Event())):
        asked = await slack.user_says(room, alice, f"<@{bot.user_id}> write me a long story")
        thread = asked["ts"]

        def streamed() -> list[dict[str, Any]]:
            return [m for m in slack.messages(room, thread_ts=thread)
                    if m.get("user") == bot.user_id and "thinking" in m.get("text", "")]
        await slack.wait_for(lambda: len(streamed()) == 1)
        assert slack_stop_buttons(slack, room, bot, thread) == []
        await slack.user_says(room, alice, f"<@{bot.user_id}> stop", thread_ts=thread)
        await slack.wait_for(lambda: "Stopped" in streamed()[0]["text"], timeout=STOP_WITHIN)


async def test_mattermost_the_stop_button_ends_the_turn_and_goes_with_it(mattermost: FakeMattermost,
                                                                         sqlite_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice")
    room = mattermost.direct_channel(alice, bot.user)
    async with running_mattermost(mattermost, [bot], database_url=sqlite_url, public=True,
                                  model=held_first(asyncio.Event())):
        await mattermost.user_posts(room, alice, "write me a long story")
        await mattermost.wait_for(lambda: len(mattermost_stop_buttons(mattermost, room, bot)) == 1)
        [live] = mattermost_stop_buttons(mattermost, room, bot)
        assert live["message"].startswith("thinking")
        forged = {**mattermost.button_context(live, "stop"), "sig": "0" * 64}
        status, _body = await mattermost.click(live, alice, "stop", context=forged)
        assert status >= 400  # verified like an approval click: a forged context stops nothing
        await mattermost.click(live, alice, "stop")
        await mattermost.wait_for(lambda: "Stopped" in mattermost_post(mattermost, room, live["id"])["message"],
                                  timeout=STOP_WITHIN)
        stopped = mattermost_post(mattermost, room, live["id"])
        assert "Stopped by" in stopped["message"] and not stopped["props"].get("attachments")
