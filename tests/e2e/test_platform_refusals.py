"""A platform that refuses a turn's call (the bot removed from the channel: Slack's `not_in_channel`) is a known
outcome: the worker logs one WARNING line with the platform's words, never an ERROR with a traceback."""

from __future__ import annotations

import logging

import pytest
from pydantic_ai import ModelMessage
from pydantic_ai.models.function import AgentInfo

from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.mattermost_harness import MattermostBot
from tests.support.mattermost_harness import running_gateway as mattermost_gateway
from tests.support.scripted import scripted
from tests.support.slack_harness import SlackBot, running_gateway

LONG = "word " * 1000
"""Longer than one Slack post the gateway writes (3,900 characters): the rest is a post of its own."""
LONGER = "word " * 4000
"""Longer than one Mattermost post the gateway writes (16,000 characters)."""


def refusals(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "gateway.pipeline.worker" and "refused a call" in r.getMessage()]


async def test_a_platform_refusal_is_one_warning_line_without_a_traceback(
        slack: FakeSlack, sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    general = slack.add_channel("general", members=[alice, bot.app])

    def removed_meanwhile(_messages: list[ModelMessage], _info: AgentInfo) -> str:
        slack.remove_member(general, {"id": bot.app.bot_user_id})  # an admin removes the bot mid-turn
        return LONG

    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None,
                               model=scripted(removed_meanwhile, chunk=len(LONG))):
        await slack.user_says(general, alice, f"{bot.mention} write at length")
        await slack.wait_for(lambda: refusals(caplog) != [], timeout=15)
    [first, *_] = refusals(caplog)
    assert first.levelno == logging.WARNING and not first.exc_info
    assert "(slack: not_in_channel)" in first.getMessage()
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []


async def test_a_mattermost_refusal_is_one_warning_line_without_a_traceback(
        mattermost: FakeMattermost, sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    team = mattermost.add_team("acme")
    channel = mattermost.add_channel(team, "town-square", members=[bot.user, alice])

    def removed_meanwhile(_messages: list[ModelMessage], _info: AgentInfo) -> str:
        mattermost.remove_member(channel, bot.user)
        return LONGER

    async with mattermost_gateway(mattermost, [bot], database_url=sqlite_url,
                                  model=scripted(removed_meanwhile, chunk=len(LONGER))):
        await mattermost.user_posts(channel, alice, "@helper write at length")
        await mattermost.wait_for(lambda: refusals(caplog) != [], timeout=15)
    [first, *_] = refusals(caplog)
    assert first.levelno == logging.WARNING and not first.exc_info
    assert "(mattermost: NotEnoughPermissions" in first.getMessage()
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []
