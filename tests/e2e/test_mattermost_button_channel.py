"""A Mattermost button's signed context names its channel: replayed from another channel, it decides nothing."""

from __future__ import annotations

import json
from typing import Any

from tests.support.fakes.mattermost import FakeMattermost
from tests.support.gated_tools import deploy_registry
from tests.support.mattermost_harness import MattermostBot, running_gateway
from tests.support.records import approval_statuses
from tests.support.scripted import calls_then_answers


def card_in(mattermost: FakeMattermost, channel: dict[str, Any], bot: MattermostBot) -> list[dict[str, Any]]:
    return [p for p in mattermost.posts(channel, user=bot.user) if p["props"].get("attachments")]


async def test_a_validly_signed_click_from_another_channel_is_refused_and_nothing_decided(
        mattermost: FakeMattermost, sqlite_url: str) -> None:
    executed: list[str] = []
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice")
    ops = mattermost.add_channel(mattermost.add_team("acme"), "ops", members=[bot.user, alice])
    dm = mattermost.direct_channel(alice, bot.user)
    async with running_gateway(mattermost, [bot], database_url=sqlite_url, public=True,
                               model=calls_then_answers(("deploy_service", {"service": "web"})),
                               registry=deploy_registry(executed), capabilities=[{"id": "deploy"}]):
        await mattermost.user_posts(ops, alice, "@helper deploy web")
        await mattermost.user_posts(dm, alice, "deploy web")
        await mattermost.wait_for(lambda: len(card_in(mattermost, ops, bot)) == len(card_in(mattermost, dm, bot)) == 1)
        [in_ops], [in_dm] = card_in(mattermost, ops, bot), card_in(mattermost, dm, bot)
        # The #ops card's context, signature intact, pressed on a button in the direct message.
        status, body = await mattermost.click(in_dm, alice, "approve",
                                              context=mattermost.button_context(in_ops, "approve"))
    assert status == 403 and "outside the channel" in json.loads(body)["error"]
    assert executed == [] and await approval_statuses(sqlite_url) == ["pending", "pending"]
