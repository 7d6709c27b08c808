"""A model that never answers cannot hold a chat: past its profile's first-token or whole-request deadline the turn
ends with a notice and one WARNING line, on every platform, through the real OpenAI client against a local server."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_ai.models import override_allow_model_requests

from capabilities import default_registry
from gateway.checks.report import check_file
from gateway.config.schema import ModelDeadlines
from gateway.config.secrets import SecretSource
from gateway.pipeline.live_reply import PLACEHOLDER
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.model_server import FakeModelServer, unconnectable_url
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, said_by
from tests.support.harness import running_gateway as telegram_gateway
from tests.support.mattermost_harness import MattermostBot
from tests.support.mattermost_harness import running_gateway as mattermost_gateway
from tests.support.scripted import answers
from tests.support.slack_harness import SlackBot
from tests.support.slack_harness import running_gateway as slack_gateway

TOO_LONG = ("Sorry, the model took too long to answer. Please try again in a moment. "
            "The operator can find the details in the gateway's log.")
FIRST_TOKEN = {"connect": 0.5, "first_token": 1.0, "whole": 30.0}
"""A first-token deadline that ends the turn long before the whole one, or the OpenAI client's own 600 s."""
WAIT = 20.0
"""How long a test waits for the notice: well past the first-token deadline, far short of the whole one."""


def unused() -> Any:
    return answers("the scripted model is not the agent's")


def warnings_and_worse(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


def one_deadline_line(caplog: pytest.LogCaptureFixture, deadline: str) -> None:
    [record] = warnings_and_worse(caplog)
    assert record.levelno == logging.WARNING and not record.exc_info
    assert deadline in record.getMessage()


async def test_a_stalled_model_ends_a_telegram_turn_at_its_first_token_deadline(
        telegram: FakeTelegram, sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with FakeModelServer("stall") as model:
        async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=unused(),
                                    agent={"model": "slow"}, top={"models": {"slow": model.profile(**FIRST_TOKEN)}}):
            await telegram.user_says(bot.token, chat, alice, "hi")
            await telegram.wait_for(lambda: said_by(telegram, chat, bot) not in ([], [PLACEHOLDER]), timeout=WAIT)
        assert said_by(telegram, chat, bot) == [TOO_LONG]
        # One attempt at most: a deadline is not retried. On a loaded machine the first-token deadline (1 s, which
        # counts from the request's start) can pass before the client's request reaches the server at all.
        assert model.held == model.requests <= 1
    one_deadline_line(caplog, "sent no output within 1 seconds (the first-token deadline)")


async def test_a_stalled_model_ends_a_slack_turn_at_its_first_token_deadline(
        slack: FakeSlack, sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    general = slack.add_channel("general", members=[alice, bot.app])
    async with FakeModelServer("stall") as model:
        async with slack_gateway(slack, [bot], database_url=sqlite_url, redis_url=None, model=unused(),
                                 agent={"model": "slow"}, top={"models": {"slow": model.profile(**FIRST_TOKEN)}}):
            said = await slack.user_says(general, alice, f"{bot.mention} hi")
            # The reply is a stream, which starts empty (`chat.startStream`): wait past it, as past a placeholder.
            await slack.wait_for(lambda: slack.texts(general, by=bot.app, thread_ts=said["ts"])
                                 not in ([], [PLACEHOLDER], [""]), timeout=WAIT)
        assert slack.texts(general, by=bot.app, thread_ts=said["ts"]) == [TOO_LONG]
    one_deadline_line(caplog, "(the first-token deadline)")


async def test_a_stalled_model_ends_a_mattermost_turn_at_its_first_token_deadline(
        mattermost: FakeMattermost, sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    team = mattermost.add_team("acme")
    channel = mattermost.add_channel(team, "town-square", members=[bot.user, alice])

    def said() -> list[str]:
        return [p["message"] for p in mattermost.posts(channel, user=bot.user)]

    async with FakeModelServer("stall") as model:
        async with mattermost_gateway(mattermost, [bot], database_url=sqlite_url, model=unused(),
                                      agent={"model": "slow"},
                                      top={"models": {"slow": model.profile(**FIRST_TOKEN)}}):
            await mattermost.user_posts(channel, alice, "@helper hi")
            await mattermost.wait_for(lambda: said() not in ([], [PLACEHOLDER]), timeout=WAIT)
        assert said() == [TOO_LONG]
    one_deadline_line(caplog, "(the first-token deadline)")


async def test_a_model_that_stops_mid_answer_ends_the_turn_at_the_whole_request_deadline(
        telegram: FakeTelegram, sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with FakeModelServer("stall_after_first_chunk") as model:
        profile = model.profile(connect=0.5, first_token=1.0, whole=2.0)
        async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=unused(),
                                    agent={"model": "slow"}, top={"models": {"slow": profile}}):
            await telegram.user_says(bot.token, chat, alice, "hi")
            await telegram.wait_for(lambda: said_by(telegram, chat, bot)[-1:] == [TOO_LONG], timeout=WAIT)
        assert model.requests == 1
    one_deadline_line(caplog, "timed out after 2 seconds")


async def test_a_model_server_that_never_accepts_ends_the_turn_at_the_connect_deadline(
        telegram: FakeTelegram, sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    with unconnectable_url() as url, override_allow_model_requests(True):
        profile = {"provider": "openai-chat", "base_url": url, "model": "unreachable",
                   "deadlines": {"connect": 0.5, "first_token": 4.5, "whole": 30.0}}
        # Under the HTTP client's own 5 s to connect: without the connect deadline the first-token one would end
        # the turn, and the log line would say so.
        async with telegram_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=unused(),
                                    agent={"model": "slow"}, top={"models": {"slow": profile}}):
            await telegram.user_says(bot.token, chat, alice, "hi")
            await telegram.wait_for(lambda: said_by(telegram, chat, bot) not in ([], [PLACEHOLDER]), timeout=WAIT)
    assert said_by(telegram, chat, bot) == [TOO_LONG]
    one_deadline_line(caplog, "ModelTimeoutError")


@pytest.mark.parametrize("deadlines", [
    {"connect": 0, "first_token": 1, "whole": 2},
    {"connect": 5, "first_token": 1, "whole": 2},
    {"connect": 1, "first_token": 60, "whole": 30},
], ids=["not-positive", "connect-past-first-token", "first-token-past-whole"])
def test_deadlines_out_of_order_or_not_positive_are_refused(deadlines: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        ModelDeadlines.model_validate(deadlines)


def test_the_default_deadlines_are_ten_sixty_and_three_hundred_seconds() -> None:
    assert ModelDeadlines() == ModelDeadlines(connect=10, first_token=60, whole=300)


def test_check_names_the_line_and_the_order_of_deadlines_out_of_order(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text("""\
models:
  local:
    provider: openai-chat
    base_url: http://127.0.0.1:11434/v1
    model: llama3.1
    deadlines: {connect: 30, first_token: 20, whole: 300}
agents:
  - {name: helper, model: local}
bots:
  - {name: tg, platform: telegram, token: "${TG_TOKEN}", agent: helper}
""")
    report = check_file(config, registry=default_registry(), secrets=SecretSource(environ={"TG_TOKEN": "1:a"}))
    assert report.lines(report.errors) == [
        f"{config}:6:5: models.local.deadlines: connect 30, first_token 20, whole 300: each contains the one before "
        "it, so write connect ≤ first_token ≤ whole"]
