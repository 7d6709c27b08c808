"""What a Mattermost approval card offers: approval for the conversation, and Deny with a reason typed in an
interactive dialog, which the model reads as the denied call's result."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from tests.support.deploy_model import Deployer
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.gated_tools import deploy_registry
from tests.support.mattermost_harness import MattermostBot, running_gateway
from tests.support.records import approval_rows

DEPLOY = [{"id": "deploy"}]


def notices_to(mattermost: FakeMattermost, user: dict[str, Any]) -> list[str]:
    return [post["message"] for user_id, post in mattermost.ephemeral if user_id == user["id"]]


@dataclass(kw_only=True)
class Room:
    mattermost: FakeMattermost
    bot: MattermostBot
    channel: dict[str, Any]
    executed: list[str]
    deployer: Deployer

    def cards(self) -> list[dict[str, Any]]:
        """The bot's approval cards, open or closed."""
        return [p for p in self.mattermost.posts(self.channel, user=self.bot.user)
                if "`deploy_service` with:" in p["message"]]

    def said(self) -> list[str]:
        return [str(p["message"]) for p in self.mattermost.posts(self.channel, user=self.bot.user)]

    async def card(self, count: int = 1) -> dict[str, Any]:
        await self.mattermost.wait_for(lambda: len(self.cards()) == count)
        return self.cards()[-1]

    async def answered(self, count: int) -> None:
        await self.mattermost.wait_for(lambda: sum(t.startswith("done:") for t in self.said()) == count)


@asynccontextmanager
async def direct(mattermost: FakeMattermost, database_url: str, asker: dict[str, Any],
                 binding: dict[str, Any]) -> AsyncIterator[Room]:
    executed: list[str] = []
    deployer = Deployer()
    bot = MattermostBot(binding=binding).register(mattermost)
    channel = mattermost.direct_channel(asker, bot.user)
    async with running_gateway(mattermost, [bot], database_url=database_url, public=True, model=deployer.model,
                               registry=deploy_registry(executed), capabilities=DEPLOY):
        yield Room(mattermost=mattermost, bot=bot, channel=channel, executed=executed, deployer=deployer)


async def test_approved_for_the_conversation_the_same_call_runs_again_without_a_card(
        mattermost: FakeMattermost, database_url: str) -> None:
    alice = mattermost.add_user("alice")
    async with direct(mattermost, database_url, alice, {"approval_options": ["once", "conversation", "deny"]}) as dm:
        await mattermost.user_posts(dm.channel, alice, "deploy web")
        card = await dm.card()
        actions = [a["id"] for a in card["props"]["attachments"][0]["actions"]]
        assert actions == ["approve", "approveconversation", "deny", "askreason"]
        await mattermost.click(card, alice, "approveconversation")
        await dm.answered(1)
        await mattermost.user_posts(dm.channel, alice, "deploy web")
        await dm.answered(2)
        assert len(dm.cards()) == 1 and dm.executed == ["web", "web"]
        await mattermost.user_posts(dm.channel, alice, "deploy api")
        await dm.card(count=2)
    assert [(r.status, r.scope) for r in await approval_rows(database_url)] == [
        ("approved", "conversation"), ("approved", None), ("pending", None)]


async def test_a_reason_typed_in_the_dialog_reaches_the_model(mattermost: FakeMattermost, database_url: str) -> None:
    alice, mallory = mattermost.add_user("alice"), mattermost.add_user("mallory")
    async with direct(mattermost, database_url, alice, {}) as dm:
        await mattermost.user_posts(dm.channel, alice, "deploy web")
        card = await dm.card()
        await mattermost.click(card, alice, "askreason")
        await mattermost.wait_for(lambda: len(mattermost.dialogs) == 1)
        [dialog] = mattermost.dialogs
        assert dialog["user_id"] == alice["id"] and dialog["dialog"]["elements"][0]["name"] == "reason"

        # Someone else's submission of Alice's dialog, and a state that is not ours: refused, nothing decided.
        assert (await mattermost.submit_dialog(dialog, mallory, {"reason": "go ahead"}))[0] == 403
        state = json.loads(dialog["dialog"]["state"]) | {"approval_id": "forged"}
        assert (await mattermost.submit_dialog(dialog, alice, {"reason": "x"}, state=json.dumps(state)))[0] == 403
        assert [r.status for r in await approval_rows(database_url)] == ["pending"]

        status, _ = await mattermost.submit_dialog(dialog, alice, {"reason": "Wait for the release notes."})
        assert status == 200
        await dm.answered(1)
    assert dm.executed == []
    [result] = dm.deployer.tool_results()
    assert result.startswith("@alice denied this call; it was not run. Their reason, in their own words")
    assert "<reason>\nWait for the release notes.\n</reason>" in result
    assert notices_to(mattermost, alice)[-1] == "Denied with your reason by @alice."
