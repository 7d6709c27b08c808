"""Gated tool calls decided by Block Kit buttons in a Slack thread, by the people allowed, once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.fakes.slack import FakeSlack
from tests.gated_tools import deploy_registry
from tests.scripted import calls_then_answers
from tests.slack_harness import SlackBot, running_gateway

DEPLOY = [{"id": "deploy"}]


@pytest_asyncio.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


def cards(slack: FakeSlack, channel: dict, bot: SlackBot, thread_ts: str | None = None) -> list[dict[str, Any]]:
    return [m for m in slack.messages(channel, thread_ts=thread_ts)
            if m.get("user") == bot.user_id and "Approval needed" in m["text"]]


def buttons(card: dict[str, Any]) -> list[str]:
    return [e["action_id"] for block in card.get("blocks") or [] for e in block.get("elements") or []]


@pytest.mark.parametrize("transport", ["socket", "http"])
async def test_only_the_requester_decides_and_the_answer_continues_in_the_thread(
        slack: FakeSlack, sqlite_url: str, transport: str) -> None:
    executed: list[str] = []
    bot = SlackBot(app=slack.add_app("helper"), transport=transport)
    alice, mallory = slack.add_user("alice", real_name="Alice"), slack.add_user("mallory", real_name="Mallory")
    ops = slack.add_channel("ops", members=[alice, mallory, bot.app])
    async with running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None,
                               model=calls_then_answers(("deploy_service", {"service": "web"})),
                               registry=deploy_registry(executed), capabilities=DEPLOY):
        said = await slack.user_says(ops, alice, f"{bot.mention} deploy web")
        await slack.wait_for(lambda: len(cards(slack, ops, bot, said["ts"])) == 1)
        [card] = cards(slack, ops, bot, said["ts"])
        assert buttons(card) == ["approval:approve", "approval:deny"]
        await slack.user_clicks(bot.app, card, mallory, "approval:approve")
        await slack.wait_for(lambda: len(slack.ephemeral) == 1)
        assert slack.ephemeral[0]["user"] == mallory["id"] and executed == []
        await slack.user_clicks(bot.app, card, alice, "approval:approve")
        await slack.wait_for(lambda: slack.texts(ops, by=bot.app, thread_ts=said["ts"])[-1:] == ["done: deployed web"])
    assert executed == ["web"]
    [closed] = [m for m in slack.messages(ops, thread_ts=said["ts"]) if m["ts"] == card["ts"]]
    assert closed["text"].startswith("*Approved* by Alice") and buttons(closed) == []
    assert [e["thread_ts"] for e in slack.ephemeral] == [said["ts"], said["ts"]]


async def test_concurrent_clicks_decide_once(slack: FakeSlack, database_url: str) -> None:
    executed: list[str] = []
    bot = SlackBot(app=slack.add_app("helper"), transport="http", binding={"approvals": {"who": "room"}})
    alice, bob = slack.add_user("alice", real_name="Alice"), slack.add_user("bob", real_name="Bob")
    ops = slack.add_channel("ops", members=[alice, bob, bot.app])
    async with running_gateway(slack, [bot], database_url=database_url, redis_url=None,
                               model=calls_then_answers(("deploy_service", {"service": "api"})),
                               registry=deploy_registry(executed), capabilities=DEPLOY):
        said = await slack.user_says(ops, alice, f"{bot.mention} deploy api")
        await slack.wait_for(lambda: len(cards(slack, ops, bot, said["ts"])) == 1)
        [card] = cards(slack, ops, bot, said["ts"])
        await asyncio.gather(slack.user_clicks(bot.app, card, alice, "approval:approve"),
                             slack.user_clicks(bot.app, card, bob, "approval:deny"),
                             slack.user_clicks(bot.app, card, bob, "approval:approve"))
        await slack.wait_for(lambda: len(slack.ephemeral) == 3
                             and slack.texts(ops, by=bot.app, thread_ts=said["ts"])[-1].startswith("done:"))
    assert sum(e["text"].startswith("Already") for e in slack.ephemeral) == 2
    assert len(executed) <= 1
