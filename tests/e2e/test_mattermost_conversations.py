"""A post to the Mattermost bot reaches the agent; the answer lands in the right channel and thread."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.fakes.mattermost import FakeMattermost
from tests.support.mattermost_harness import MattermostBot, running_gateway
from tests.support.scripted import answers, echoes, scripted, user_prompts, waits_for


@dataclass(frozen=True, slots=True, kw_only=True)
class World:
    """A team with a public channel where the bot, Alice and Bob are members."""

    bot: MattermostBot
    team: dict[str, Any]
    channel: dict[str, Any]
    alice: dict[str, Any]
    bob: dict[str, Any]


@pytest.fixture
def world(mattermost: FakeMattermost) -> World:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    bob = mattermost.add_user("bob", first_name="Bob")
    team = mattermost.add_team("acme")
    channel = mattermost.add_channel(team, "town-square", members=[bot.user, alice, bob])
    return World(bot=bot, team=team, channel=channel, alice=alice, bob=bob)


def bot_texts(mattermost: FakeMattermost, world: World, channel: dict[str, Any] | None = None,
              *, thread: str | None = None) -> list[str]:
    return [p["message"] for p in mattermost.posts(channel or world.channel, user=world.bot.user, thread=thread)]


def bot_posts(mattermost: FakeMattermost, world: World, channel: dict[str, Any] | None = None) -> list[dict]:
    return mattermost.posts(channel or world.channel, user=world.bot.user)


async def test_room_handles_never_address_the_bot(mattermost: FakeMattermost, world: World,
                                                  sqlite_url: str) -> None:
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes()):
        for handle in ("@channel", "@all", "@here", "@everyone"):
            await mattermost.user_posts(world.channel, world.alice, f"{handle} standup in five minutes")
        await mattermost.user_posts(world.channel, world.alice, "@helper are you there?")
        await mattermost.wait_for(lambda: len(bot_texts(mattermost, world)) == 1)
    assert bot_texts(mattermost, world) == ["echo: [alice] are you there?"]


async def test_a_follow_up_in_the_thread_continues_the_conversation_without_a_mention(
        mattermost: FakeMattermost, world: World, database_url: str) -> None:
    seen: list[list[str]] = []

    def remember(messages, _info) -> str:
        seen.append(user_prompts(messages))
        return f"answer {len(seen)}"

    async with running_gateway(mattermost, [world.bot], database_url=database_url, model=scripted(remember)):
        root = await mattermost.user_posts(world.channel, world.alice, "@helper pick a number")
        await mattermost.wait_for(lambda: bot_texts(mattermost, world) == ["answer 1"])
        await mattermost.user_posts(world.channel, world.alice, "and double it", root_id=root["id"])
        await mattermost.wait_for(lambda: bot_texts(mattermost, world) == ["answer 1", "answer 2"])
        other = await mattermost.user_posts(world.channel, world.bob, "lunch?")
        await mattermost.user_posts(world.channel, world.alice, "sure", root_id=other["id"])
        await mattermost.user_posts(world.channel, world.alice, "@helper thanks", root_id=root["id"])
        await mattermost.wait_for(lambda: len(bot_texts(mattermost, world)) == 3)
    assert [p["root_id"] for p in bot_posts(mattermost, world)] == [root["id"]] * 3
    assert seen[1] == ["[alice] pick a number", "[alice] and double it"]


async def test_first_mention_mid_thread_reads_the_thread_so_far(mattermost: FakeMattermost, world: World,
                                                                sqlite_url: str) -> None:
    seen: list[str] = []

    def remember(messages, _info) -> str:
        seen.extend(user_prompts(messages))
        return "summary"

    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=scripted(remember)):
        root = await mattermost.user_posts(world.channel, world.alice, "the deploy failed again")
        await mattermost.user_posts(world.channel, world.bob, "same error as Tuesday", root_id=root["id"])
        await mattermost.user_posts(world.channel, world.alice, "@helper summarize please", root_id=root["id"])
        await mattermost.wait_for(lambda: bot_texts(mattermost, world) == ["summary"])
    context, prompt = seen
    assert "[alice] the deploy failed again" in context and "[bob] same error as Tuesday" in context
    assert prompt == "[alice] summarize please"


async def test_group_message_needs_a_mention(mattermost: FakeMattermost, world: World, sqlite_url: str) -> None:
    group = mattermost.group_channel([world.alice, world.bob, world.bot.user])
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes()):
        await mattermost.user_posts(group, world.alice, "shall we ask the bot?")
        await mattermost.user_posts(group, world.bob, "@helper yes, hello")
        await mattermost.wait_for(lambda: bot_texts(mattermost, world, group) == ["echo: [bob] yes, hello"])


async def test_a_message_waiting_for_its_turn_shows_typing_in_its_channel(mattermost: FakeMattermost, world: World,
                                                                          sqlite_url: str) -> None:
    dm = mattermost.direct_channel(world.alice, world.bot.user)
    gate, started = asyncio.Event(), asyncio.Event()
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url,
                               model=waits_for(gate, "done", started=started)):
        await mattermost.user_posts(dm, world.alice, "first")
        await asyncio.wait_for(started.wait(), 10)
        assert mattermost.route_calls("typing") == []  # the placeholder is the first sign of a turn that starts
        await mattermost.user_posts(dm, world.alice, "second")  # waits behind the first turn of its channel
        await mattermost.wait_for(lambda: len(mattermost.route_calls("typing")) == 1)
        [typing] = mattermost.route_calls("typing")
        assert typing.body["channel_id"] == dm["id"]
        gate.set()
        await mattermost.wait_for(lambda: bot_texts(mattermost, world, dm).count("thinking done") == 2)


async def test_an_answer_past_the_post_limit_continues_in_the_thread(mattermost: FakeMattermost, world: World,
                                                                    sqlite_url: str) -> None:
    long_answer = "\n\n".join(f"Paragraph {i}. " + "word " * 300 for i in range(14))
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=answers(long_answer)):
        root = await mattermost.user_posts(world.channel, world.alice, "@helper write a lot")
        await mattermost.wait_for(lambda: len(bot_texts(mattermost, world)) == 2, timeout=10)
    posts = bot_posts(mattermost, world)
    assert all(len(p["message"]) <= 16_383 for p in posts)
    assert [p["root_id"] for p in posts] == [root["id"], root["id"]]
    assert " ".join(p["message"] for p in posts).split() == long_answer.split()


async def test_without_its_own_user_id_the_bot_answers_direct_messages_only(
        mattermost: FakeMattermost, world: World, sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    mattermost.hide_user_id(world.bot.user)
    dm = mattermost.direct_channel(world.alice, world.bot.user)
    async with running_gateway(mattermost, [world.bot], database_url=sqlite_url, model=echoes()):
        await mattermost.user_posts(world.channel, world.alice, "@helper hello?")
        await mattermost.user_posts(dm, world.alice, "hi")
        await mattermost.wait_for(lambda: bot_texts(mattermost, world, dm) == ["echo: hi"])
    assert bot_texts(mattermost, world) == []
    assert any("could not learn its own user id" in r.getMessage() for r in caplog.records
               if r.levelno == logging.ERROR)
