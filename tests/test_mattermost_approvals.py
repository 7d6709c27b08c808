"""Gated tool calls decided by Mattermost buttons: signed contexts, the requester decides, the answer continues."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from tests.fakes.mattermost import FakeMattermost
from tests.gated_tools import deploy_registry
from tests.mattermost_harness import MattermostBot, running_gateway
from tests.scripted import calls_then_answers

DEPLOY = [{"id": "deploy"}]


@pytest_asyncio.fixture
async def mattermost() -> AsyncIterator[FakeMattermost]:
    async with FakeMattermost() as fake:
        yield fake


def cards(mattermost: FakeMattermost, channel: dict[str, Any], bot: MattermostBot) -> list[dict[str, Any]]:
    return [p for p in mattermost.posts(channel, user=bot.user) if "Approval needed" in p["message"]
            or p["props"].get("attachments")]


def notices_to(mattermost: FakeMattermost, user: dict[str, Any]) -> list[str]:
    return [post["message"] for user_id, post in mattermost.ephemeral if user_id == user["id"]]


async def test_only_the_requester_decides_and_the_answer_continues_in_the_thread(
        mattermost: FakeMattermost, database_url: str) -> None:
    executed: list[str] = []
    bot = MattermostBot().register(mattermost)
    alice, mallory = mattermost.add_user("alice"), mattermost.add_user("mallory")
    channel = mattermost.add_channel(mattermost.add_team("acme"), "ops", members=[bot.user, alice, mallory])
    async with running_gateway(mattermost, [bot], database_url=database_url, public=True,
                               model=calls_then_answers(("deploy_service", {"service": "web"})),
                               registry=deploy_registry(executed), capabilities=DEPLOY):
        asked = await mattermost.user_posts(channel, alice, "@helper deploy web")
        await mattermost.wait_for(lambda: len(cards(mattermost, channel, bot)) == 1)
        [card] = cards(mattermost, channel, bot)
        assert card["root_id"] == asked["id"] and '"service": "web"' in card["message"]
        await mattermost.click(card, mallory, "approve")
        await mattermost.wait_for(lambda: len(notices_to(mattermost, mallory)) == 1)
        assert executed == []
        await mattermost.click(card, alice, "approve")
        await mattermost.wait_for(lambda: mattermost.posts(channel, user=bot.user)[-1]["message"]
                                  == "done: deployed web")
    assert executed == ["web"]
    [closed] = [p for p in mattermost.posts(channel) if p["id"] == card["id"]]
    assert closed["message"].startswith("**Approved** by alice") and not closed["props"].get("attachments")
    assert {p["root_id"] for p in mattermost.posts(channel, user=bot.user)} == {asked["id"]}


async def test_a_click_with_a_forged_context_is_refused(mattermost: FakeMattermost, sqlite_url: str) -> None:
    executed: list[str] = []
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice")
    dm = mattermost.direct_channel(alice, bot.user)
    async with running_gateway(mattermost, [bot], database_url=sqlite_url, public=True,
                               model=calls_then_answers(("deploy_service", {"service": "db"})),
                               registry=deploy_registry(executed), capabilities=DEPLOY):
        await mattermost.user_posts(dm, alice, "deploy db")
        await mattermost.wait_for(lambda: len(cards(mattermost, dm, bot)) == 1)
        [card] = cards(mattermost, dm, bot)
        forged = {**mattermost.button_context(card, "approve"), "approval_id": "someone-else"}
        status, body = await mattermost.click(card, alice, "approve", context=forged)
    assert status == 403 and "signature" in json.loads(body)["error"]
    assert executed == []


async def test_without_a_public_url_the_card_says_it_has_no_buttons(mattermost: FakeMattermost,
                                                                    sqlite_url: str) -> None:
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice")
    dm = mattermost.direct_channel(alice, bot.user)
    async with running_gateway(mattermost, [bot], database_url=sqlite_url,
                               model=calls_then_answers(("deploy_service", {"service": "db"})),
                               registry=deploy_registry([]), capabilities=DEPLOY):
        await mattermost.user_posts(dm, alice, "deploy db")
        await mattermost.wait_for(lambda: len(cards(mattermost, dm, bot)) == 1)
    [card] = cards(mattermost, dm, bot)
    assert "server.public_url" in card["message"] and not card["props"].get("attachments")
