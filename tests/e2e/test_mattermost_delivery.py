"""Delivery on Mattermost: reconnects lose nothing, webhooks are verified, two transports answer once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.fakes.mattermost import FakeMattermost
from tests.support.mattermost_harness import MattermostBot, hook_up, running_gateway, webhook_url
from tests.support.records import inbox_rows
from tests.support.scripted import echoes

HOOK_TOKEN = "hook-token-pasted-from-mattermost"


@dataclass(frozen=True, slots=True, kw_only=True)
class World:
    bot: MattermostBot
    team: dict[str, Any]
    channel: dict[str, Any]
    alice: dict[str, Any]


def world_with(mattermost: FakeMattermost, bot: MattermostBot) -> World:
    bot.register(mattermost)
    alice = mattermost.add_user("alice")
    team = mattermost.add_team("acme")
    channel = mattermost.add_channel(team, "town-square", members=[bot.user, alice])
    return World(bot=bot, team=team, channel=channel, alice=alice)


def texts(mattermost: FakeMattermost, channel: dict[str, Any], bot: MattermostBot) -> list[str]:
    return [p["message"] for p in mattermost.posts(channel, user=bot.user)]


class LogLine(logging.Handler):
    """Sets `seen` when a record containing `needle` is logged; a wait on it replaces any sleep."""

    def __init__(self, needle: str) -> None:
        super().__init__()
        self.needle = needle
        self.seen = asyncio.Event()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if self.needle in record.getMessage():
            self.records.append(record)
            self.seen.set()


@pytest.fixture
def log_line() -> Iterator[type[LogLine]]:
    handlers: list[LogLine] = []

    def watch(needle: str) -> LogLine:
        handler = LogLine(needle)
        logging.getLogger().addHandler(handler)
        handlers.append(handler)
        return handler

    yield watch  # type: ignore[misc]
    for handler in handlers:
        logging.getLogger().removeHandler(handler)


# -- the event stream ----------------------------------------------------------------------------

@pytest.mark.parametrize("abrupt", [False, True], ids=["server-restart", "tcp-reset"])
async def test_a_post_sent_while_the_stream_was_down_is_answered_after_reconnect_once(
        mattermost: FakeMattermost, database_url: str, abrupt: bool) -> None:
    world = world_with(mattermost, MattermostBot())
    dm = mattermost.direct_channel(world.alice, world.bot.user)
    async with running_gateway(mattermost, [world.bot], database_url=database_url, model=echoes()):
        mattermost.refuse_connections()
        await mattermost.drop_connections(abrupt=abrupt)
        await mattermost.wait_for(lambda: not mattermost.connected(world.bot.user))
        await mattermost.user_posts(dm, world.alice, "are you there?")
        mattermost.refuse_connections(False)
        await mattermost.wait_for(lambda: texts(mattermost, dm, world.bot) == ["echo: are you there?"], timeout=10)
        sessions = mattermost.sessions
        await mattermost.drop_connections()
        await mattermost.wait_for(lambda: mattermost.sessions > sessions and mattermost.connected(world.bot.user),
                                  timeout=10)
        await mattermost.user_posts(dm, world.alice, "still there?")
        await mattermost.wait_for(lambda: len(texts(mattermost, dm, world.bot)) == 2)
    assert texts(mattermost, dm, world.bot) == ["echo: are you there?", "echo: still there?"]


async def test_after_a_reconnect_chatter_from_before_the_mention_stays_unanswered(
        mattermost: FakeMattermost, sqlite_url: str) -> None:
    world = world_with(mattermost, MattermostBot())
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes()):
        root = await mattermost.user_posts(world.channel, world.alice, "the build is red")
        await mattermost.user_posts(world.channel, world.alice, "probably the cache", root_id=root["id"])
        await mattermost.user_posts(world.channel, world.alice, "@helper can you look?", root_id=root["id"])
        await mattermost.wait_for(lambda: len(texts(mattermost, world.channel, world.bot)) == 1)
        sessions = mattermost.sessions
        await mattermost.drop_connections()
        await mattermost.wait_for(lambda: mattermost.sessions > sessions and mattermost.connected(world.bot.user),
                                  timeout=10)
        await mattermost.user_posts(world.channel, world.alice, "thanks", root_id=root["id"])
        await mattermost.wait_for(lambda: len(texts(mattermost, world.channel, world.bot)) == 2)
    first, second = texts(mattermost, world.channel, world.bot)
    assert first.endswith("[alice] can you look?") and second == "echo: [alice] thanks"


async def test_a_wrong_token_stops_the_bot_with_a_clear_log_line(mattermost: FakeMattermost, sqlite_url: str,
                                                                  log_line: type[LogLine]) -> None:
    world = world_with(mattermost, MattermostBot())
    refused = log_line("refused the token")
    world.bot.token = "not-the-token"
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes(), connected=False):
        await asyncio.wait_for(refused.seen.wait(), timeout=5)
    [record] = refused.records
    assert record.levelno == logging.ERROR
    assert world.bot.name in record.getMessage() and "Bot Accounts" in record.getMessage()
    assert "not-the-token" not in record.getMessage()


async def test_a_bot_outside_its_team_is_named_in_the_log(mattermost: FakeMattermost, sqlite_url: str,
                                                           log_line: type[LogLine]) -> None:
    world = world_with(mattermost, MattermostBot(team="ops"))
    outside = log_line("not a member of team 'ops'")
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes()):
        await asyncio.wait_for(outside.seen.wait(), timeout=5)
    assert "acme" in outside.records[0].getMessage(), "the log says which teams the bot is in"


async def test_a_rate_limited_post_is_retried_and_answered_once(mattermost: FakeMattermost,
                                                                sqlite_url: str) -> None:
    world = world_with(mattermost, MattermostBot())
    dm = mattermost.direct_channel(world.alice, world.bot.user)
    mattermost.fail_next("create_post", 429, headers={"X-RateLimit-Reset": "0"})
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes()):
        await mattermost.user_posts(dm, world.alice, "hi")
        await mattermost.wait_for(lambda: texts(mattermost, dm, world.bot) == ["echo: hi"])
    assert len(mattermost.route_calls("create_post")) == 2


# -- the outgoing webhook ------------------------------------------------------------------------

@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "application/json"],
                         ids=["form", "json"])
async def test_a_webhook_trigger_is_answered_in_a_thread_under_the_post(
        mattermost: FakeMattermost, sqlite_url: str, content_type: str) -> None:
    world = world_with(mattermost, MattermostBot(transport="webhook", webhook_token=HOOK_TOKEN))
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes()) as gateway:
        hook_up(mattermost, gateway, world.bot, world.team, trigger_words=["helper:"], content_type=content_type)
        asked = await mattermost.user_posts(world.channel, world.alice, "helper: what time is it?")
        await mattermost.wait_for(lambda: texts(mattermost, world.channel, world.bot) == [
            "echo: [alice] what time is it?"])
    [answer] = mattermost.posts(world.channel, user=world.bot.user)
    assert answer["root_id"] == asked["id"]
    assert [status for status, _ in mattermost.webhook_responses] == [200]


async def test_a_channel_webhook_follows_the_thread_the_bot_answered_in(mattermost: FakeMattermost,
                                                                        sqlite_url: str) -> None:
    world = world_with(mattermost, MattermostBot(transport="webhook", webhook_token=HOOK_TOKEN))
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes()) as gateway:
        hook_up(mattermost, gateway, world.bot, world.team, channel=world.channel)
        await mattermost.user_posts(world.channel, world.alice, "morning all")
        root = await mattermost.user_posts(world.channel, world.alice, "@helper pick a colour")
        await mattermost.wait_for(lambda: len(texts(mattermost, world.channel, world.bot)) == 1)
        await mattermost.user_posts(world.channel, world.alice, "why that one?", root_id=root["id"])
        await mattermost.wait_for(lambda: len(texts(mattermost, world.channel, world.bot)) == 2)
    assert texts(mattermost, world.channel, world.bot) == ["echo: [alice] pick a colour", "echo: [alice] why that one?"]
    assert {p["root_id"] for p in mattermost.posts(world.channel, user=world.bot.user)} == {root["id"]}


async def test_tokens_never_reach_the_log_with_both_transports(mattermost: FakeMattermost, sqlite_url: str,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # websockets logs every frame at DEBUG, the authentication challenge too
    world = world_with(mattermost, MattermostBot(webhook_token=HOOK_TOKEN))
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes()) as gateway:
        hook_up(mattermost, gateway, world.bot, world.team, trigger_words=["@helper"])
        await mattermost.user_posts(world.channel, world.alice, "@helper once please")
        await mattermost.wait_for(lambda: len(texts(mattermost, world.channel, world.bot)) == 1
                                  and len(mattermost.webhook_responses) == 1)
    assert world.bot.token not in caplog.text and HOOK_TOKEN not in caplog.text


async def test_a_webhook_from_a_channel_the_bot_is_not_in_says_how_to_invite_it(
        mattermost: FakeMattermost, sqlite_url: str) -> None:
    world = world_with(mattermost, MattermostBot(transport="webhook", webhook_token=HOOK_TOKEN))
    elsewhere = mattermost.add_channel(world.team, "random", members=[world.alice])
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes()) as gateway:
        hook_up(mattermost, gateway, world.bot, world.team, trigger_words=["@helper"])
        await mattermost.user_posts(elsewhere, world.alice, "@helper hello?")
    [notice] = [p for p in mattermost.posts(elsewhere) if p["props"].get("from_webhook")]
    assert "/invite @helper" in notice["message"]
    assert await inbox_rows(sqlite_url) == []


async def test_a_webhook_body_that_is_neither_json_nor_a_form_is_refused(mattermost: FakeMattermost,
                                                                         sqlite_url: str) -> None:
    world = world_with(mattermost, MattermostBot(transport="webhook", webhook_token=HOOK_TOKEN))
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes()) as gateway, \
            httpx.AsyncClient() as client:
        response = await client.post(webhook_url(gateway, world.bot), content=b"",
                                     headers={"Content-Type": "text/plain"})
    assert response.status_code == 403
