"""The first sign of a message that waits for its turn, on each platform's own surface: Mattermost's typing
(`POST /users/{id}/typing` with the channel and the thread), kept up every few seconds until the turn starts; Slack's
status line under the thread (`assistant.threads.setStatus`), which the answer's first post clears."""

from __future__ import annotations

import asyncio

from gateway.pipeline.intake import WORKING
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.mattermost_harness import MattermostBot
from tests.support.mattermost_harness import running_gateway as running_mattermost
from tests.support.scripted import waits_for
from tests.support.slack_harness import SlackBot
from tests.support.slack_harness import running_gateway as running_slack


async def test_a_queued_mattermost_message_shows_typing_in_its_thread_renewed_until_its_turn(
        mattermost: FakeMattermost, sqlite_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    team = mattermost.add_team("acme")
    channel = mattermost.add_channel(team, "town-square", members=[bot.user, alice])
    gate = asyncio.Event()

    def typing() -> list[dict]:
        return [call.body for call in mattermost.route_calls("typing")]

    def answers() -> list[str]:
        return [p["message"] for p in mattermost.posts(channel, user=bot.user)]

    async with running_mattermost(mattermost, [bot], database_url=sqlite_url, model=waits_for(gate, "done")):
        root = await mattermost.user_posts(channel, alice, "@helper first")
        await mattermost.wait_for(lambda: answers() == ["thinking "])  # its turn runs, held by the model
        await mattermost.user_posts(channel, alice, "@helper second", root_id=root["id"])  # waits behind it
        await mattermost.wait_for(lambda: len(typing()) >= 2, timeout=15)  # shown, then shown again
        assert typing()[0] == {"channel_id": channel["id"], "parent_id": root["id"]}
        assert answers() == ["thinking "]  # nothing posted for the second message meanwhile
        gate.set()
        await mattermost.wait_for(lambda: answers().count("thinking done") == 2)


async def test_a_queued_slack_message_shows_the_status_line_which_its_answer_clears(
        slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    ada = slack.add_user("ada", real_name="Ada")
    channel = slack.add_channel("general", members=[ada, bot.app])
    gate = asyncio.Event()

    def statuses() -> list[dict]:
        return [call.params for call in slack.calls if call.method == "assistant.threads.setStatus"]

    async with running_slack(slack, [bot], database_url=sqlite_url, redis_url=None, model=waits_for(gate, "done")):
        root = await slack.user_says(channel, ada, f"<@{bot.app.bot_user_id}> first")
        await slack.wait_for(lambda: slack.texts(channel, by=bot.app, thread_ts=root["ts"]) == ["thinking "])
        await slack.user_says(channel, ada, "second", thread_ts=root["ts"])  # waits behind the first turn
        await slack.wait_for(lambda: len(statuses()) == 1)
        assert statuses()[0]["channel_id"] == channel["id"] and statuses()[0]["thread_ts"] == root["ts"]
        assert statuses()[0]["status"] == WORKING and statuses()[0]["loading_messages"]
        assert slack.status(channel, root["ts"]) == WORKING
        gate.set()
        await slack.wait_for(lambda: slack.texts(channel, by=bot.app, thread_ts=root["ts"]).count("thinking done")
                             == 2)
        assert slack.status(channel, root["ts"]) == ""  # the answer's post cleared it
