"""Gated tool calls decided by Mattermost buttons: signed contexts, only the people allowed, exactly once,
across restarts, with the card always telling the truth."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from gateway.server.app import Gateway, Tuning
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.gated_tools import deploy_registry
from tests.support.harness import FAST
from tests.support.mattermost_harness import MattermostBot, running_gateway
from tests.support.records import approval_statuses, make_overdue
from tests.support.scripted import calls_then_answers

DEPLOY = [{"id": "deploy"}]
DEPLOY_WEB: tuple[tuple[str, dict[str, object]], ...] = (("deploy_service", {"service": "web"}),)
NO_SWEEP = replace(FAST, expiry_interval=3600.0)
"""The expiry sweep never runs during a test: whatever expires, a click expired."""


def cards(mattermost: FakeMattermost, channel: dict[str, Any], bot: MattermostBot) -> list[dict[str, Any]]:
    return [p for p in mattermost.posts(channel, user=bot.user) if "Approval needed" in p["message"]
            or p["props"].get("attachments")]


def notices_to(mattermost: FakeMattermost, user: dict[str, Any]) -> list[str]:
    return [post["message"] for user_id, post in mattermost.ephemeral if user_id == user["id"]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Pending:
    bot: MattermostBot
    room: dict[str, Any]
    asked: dict[str, Any]
    card: dict[str, Any]
    executed: list[str]
    gateway: Gateway
    shown_at: int
    """How many API calls the server had seen when the card was shown."""

    def card_replacements(self, mattermost: FakeMattermost) -> list[str]:
        """The paths of the whole-post updates (`PUT /posts/{id}`) of the card since it was shown (the answer's
        final edit is one too, of another post)."""
        return [c.path for c in mattermost.calls[self.shown_at:]
                if c.route == "update_post" and c.path == f"/api/v4/posts/{self.card['id']}"]

    def bot_posts(self, mattermost: FakeMattermost) -> list[dict[str, Any]]:
        return mattermost.posts(self.room, user=self.bot.user)

    def last_said(self, mattermost: FakeMattermost) -> str:
        return str(self.bot_posts(mattermost)[-1]["message"])

    def current(self, mattermost: FakeMattermost, post: dict[str, Any] | None = None) -> dict[str, Any]:
        """The card (or `post`) as the server holds it now."""
        wanted = (post or self.card)["id"]
        [found] = [p for p in mattermost.posts(self.room) if p["id"] == wanted]
        return found


@asynccontextmanager
async def awaiting_decision(mattermost: FakeMattermost, database_url: str, *, asker: dict[str, Any],
                            text: str = "deploy web", others: Sequence[dict[str, Any]] | None = None,
                            binding: dict[str, Any] | None = None,
                            calls: tuple[tuple[str, dict[str, object]], ...] = DEPLOY_WEB,
                            tuning: Tuning = FAST) -> AsyncIterator[Pending]:
    """A running, public gateway whose agent has asked to run `deploy_service`; the card is posted.

    Without `others` the asker writes to the bot in a direct message; with them (even none), the asker
    mentions the bot in a team channel whose members are the bot, the asker and `others`.
    """
    executed: list[str] = []
    bot = MattermostBot(binding=binding or {}).register(mattermost)
    if others is None:
        room = mattermost.direct_channel(asker, bot.user)
    else:
        room = mattermost.add_channel(mattermost.add_team("acme"), "ops", members=[bot.user, asker, *others])
        text = f"@{bot.username} {text}"
    async with running_gateway(mattermost, [bot], database_url=database_url, public=True,
                               model=calls_then_answers(*calls), registry=deploy_registry(executed),
                               capabilities=DEPLOY, tuning=tuning) as gateway:
        asked = await mattermost.user_posts(room, asker, text)
        await mattermost.wait_for(lambda: len(cards(mattermost, room, bot)) == 1)
        [card] = cards(mattermost, room, bot)
        yield Pending(bot=bot, room=room, asked=asked, card=card, executed=executed, gateway=gateway,
                      shown_at=len(mattermost.calls))


async def test_only_the_requester_decides_and_the_answer_continues_in_the_thread(
        mattermost: FakeMattermost, database_url: str) -> None:
    alice, mallory = mattermost.add_user("alice"), mattermost.add_user("mallory")
    async with awaiting_decision(mattermost, database_url, asker=alice, others=[mallory]) as pending:
        card = pending.card
        assert card["root_id"] == pending.asked["id"] and '"service": "web"' in card["message"]
        await mattermost.click(card, mallory, "approve")
        await mattermost.wait_for(lambda: len(notices_to(mattermost, mallory)) == 1)
        assert pending.executed == [] and pending.card_replacements(mattermost) == []
        await mattermost.click(card, alice, "approve")
        await mattermost.wait_for(lambda: pending.last_said(mattermost) == "done: deployed web")
    assert pending.executed == ["web"]
    closed = pending.current(mattermost)
    assert closed["message"].startswith("**Approved** by @alice") and not closed["props"].get("attachments")
    assert {p["root_id"] for p in pending.bot_posts(mattermost)} == {pending.asked["id"]}


async def test_a_denial_is_told_to_the_model(mattermost: FakeMattermost, sqlite_url: str) -> None:
    alice = mattermost.add_user("alice")
    async with awaiting_decision(mattermost, sqlite_url, asker=alice) as pending:
        await mattermost.click(pending.card, alice, "deny")
        await mattermost.wait_for(lambda: pending.last_said(mattermost).startswith("done:"))
    assert pending.executed == []
    assert pending.last_said(mattermost) == "done: @alice denied this call; it was not run."


async def test_concurrent_clicks_decide_once(mattermost: FakeMattermost, database_url: str) -> None:
    alice, bob = mattermost.add_user("alice"), mattermost.add_user("bob")
    async with awaiting_decision(mattermost, database_url, asker=alice, others=[bob],
                                 binding={"approvals": {"who": "room"}}) as pending:
        card = pending.card
        await asyncio.gather(mattermost.click(card, alice, "approve"), mattermost.click(card, bob, "deny"),
                             mattermost.click(card, bob, "approve"))
        await mattermost.wait_for(lambda: len(mattermost.ephemeral) == 3
                                  and pending.last_said(mattermost).startswith("done:"))
    notices = [post["message"] for _user, post in mattermost.ephemeral]
    assert sum("Already" in n for n in notices) == 2
    [status] = await approval_statuses(database_url)
    assert pending.executed == (["web"] if status == "approved" else [])
    assert pending.card_replacements(mattermost) == [f"/api/v4/posts/{card['id']}"]


async def test_a_click_after_a_restart_resumes_the_parked_run(mattermost: FakeMattermost, database_url: str) -> None:
    alice = mattermost.add_user("alice")
    async with awaiting_decision(mattermost, database_url, asker=alice, others=[]) as pending:
        pass
    async with running_gateway(mattermost, [pending.bot], database_url=database_url, public=True,
                               port=pending.gateway.port, model=calls_then_answers(*DEPLOY_WEB),
                               registry=deploy_registry(pending.executed), capabilities=DEPLOY):
        await mattermost.click(pending.card, alice, "approve")
        await mattermost.wait_for(lambda: pending.last_said(mattermost) == "done: deployed web")
    assert pending.executed == ["web"]
    assert {p["root_id"] for p in pending.bot_posts(mattermost)} == {pending.asked["id"]}


async def test_an_undecided_call_expires_and_the_card_says_so(mattermost: FakeMattermost, sqlite_url: str) -> None:
    alice = mattermost.add_user("alice")
    async with awaiting_decision(mattermost, sqlite_url, asker=alice,
                                 binding={"approvals": {"expires_after": 1}}) as pending:
        await mattermost.wait_for(lambda: pending.last_said(mattermost).startswith("done:"), timeout=10)
    assert pending.executed == []
    assert pending.last_said(mattermost) == "done: Nobody approved this call before it expired, so it was not run."
    closed = pending.current(mattermost)
    assert closed["message"].startswith("**Expired**") and not closed["props"].get("attachments")


async def test_a_click_after_expiry_is_told_privately_and_closes_the_card(mattermost: FakeMattermost,
                                                                         sqlite_url: str) -> None:
    """Mattermost drops clicks on buttons a post no longer has, so a late click reaches the gateway only
    from a card whose edit failed (or while the edit is in flight): here the server refuses the edit, and
    the late click makes the card tell the truth."""
    alice = mattermost.add_user("alice")
    async with awaiting_decision(mattermost, sqlite_url, asker=alice,
                                 binding={"approvals": {"expires_after": 1}}) as pending:
        mattermost.fail_next("update_post", 500)
        await mattermost.wait_for(lambda: pending.last_said(mattermost).startswith("done:"), timeout=10)
        await mattermost.click(pending.card, alice, "approve")
        await mattermost.wait_for(lambda: len(notices_to(mattermost, alice)) == 1)
        await mattermost.wait_for(lambda: not pending.current(mattermost)["props"].get("attachments"))
    [notice] = notices_to(mattermost, alice)
    assert notice.startswith(":no_entry_sign: Expired at ") and notice.endswith("the call was not run.")
    assert pending.executed == [] and await approval_statuses(sqlite_url) == ["expired"]
    assert pending.current(mattermost)["message"].startswith("**Expired**")


async def test_a_click_with_a_forged_context_is_refused(mattermost: FakeMattermost, sqlite_url: str) -> None:
    alice = mattermost.add_user("alice")
    async with awaiting_decision(mattermost, sqlite_url, asker=alice) as pending:
        forged = {**mattermost.button_context(pending.card, "approve"), "approval_id": "someone-else"}
        status, body = await mattermost.click(pending.card, alice, "approve", context=forged)
    assert status == 403 and "signature" in json.loads(body)["error"]
    assert pending.executed == [] and await approval_statuses(sqlite_url) == ["pending"]


async def test_two_person_rule(mattermost: FakeMattermost, sqlite_url: str) -> None:
    alice, bob = mattermost.add_user("alice"), mattermost.add_user("bob")
    rule = {"approvals": {"who": "approvers", "approvers": ["@alice", "@bob"], "required_approvals": 2}}
    async with awaiting_decision(mattermost, sqlite_url, asker=alice, others=[bob], binding=rule) as pending:
        await mattermost.click(pending.card, alice, "approve")
        await mattermost.wait_for(lambda: len(notices_to(mattermost, alice)) == 1)
        assert notices_to(mattermost, alice) == ["Your approval is recorded (1 of 2)."]
        assert pending.executed == []
        voted = pending.current(mattermost)
        assert "Approved by @alice (1 of 2)." in voted["message"] and voted["props"].get("attachments")
        await mattermost.click(pending.card, bob, "approve")
        await mattermost.wait_for(lambda: pending.last_said(mattermost) == "done: deployed web")
    assert pending.executed == ["web"]
    assert pending.current(mattermost)["message"].startswith("**Approved** by @alice and @bob at ")


async def test_a_continuation_that_asks_again_posts_a_new_card(mattermost: FakeMattermost, sqlite_url: str) -> None:
    alice = mattermost.add_user("alice")
    two_calls = (("deploy_service", {"service": "web"}), ("deploy_service", {"service": "worker"}))
    async with awaiting_decision(mattermost, sqlite_url, asker=alice, others=[], text="deploy everything",
                                 calls=two_calls) as pending:
        first = pending.card
        await mattermost.click(first, alice, "approve")

        def later_cards() -> list[dict[str, Any]]:
            return [c for c in cards(mattermost, pending.room, pending.bot) if c["id"] != first["id"]]
        await mattermost.wait_for(lambda: len(later_cards()) == 1)
        [second] = later_cards()
        assert '"service": "worker"' in second["message"] and second["root_id"] == pending.asked["id"]
        await mattermost.click(second, alice, "approve")
        await mattermost.wait_for(lambda: pending.last_said(mattermost) == "done: deployed worker")
    assert pending.executed == ["web", "worker"]


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


async def test_a_click_after_the_expiry_is_refused_and_expires_the_card_then(mattermost: FakeMattermost,
                                                                            sqlite_url: str) -> None:
    alice = mattermost.add_user("alice")
    async with awaiting_decision(mattermost, sqlite_url, asker=alice, tuning=NO_SWEEP) as pending:
        await make_overdue(sqlite_url)
        await mattermost.click(pending.card, alice, "approve")
        await mattermost.wait_for(lambda: pending.last_said(mattermost).startswith("done:"))
    [notice] = notices_to(mattermost, alice)
    assert notice.startswith(":no_entry_sign: Expired at ")
    closed = pending.current(mattermost)
    assert closed["message"].startswith("**Expired**") and not closed["props"].get("attachments")
    assert pending.last_said(mattermost) == "done: Nobody approved this call before it expired, so it was not run."
    assert pending.executed == [] and await approval_statuses(sqlite_url) == ["expired"]


async def test_a_gated_call_leaves_the_card_and_the_answer(mattermost: FakeMattermost, sqlite_url: str) -> None:
    alice = mattermost.add_user("alice")
    async with awaiting_decision(mattermost, sqlite_url, asker=alice) as pending:
        await mattermost.click(pending.card, alice, "approve")
        await mattermost.wait_for(lambda: pending.last_said(mattermost) == "done: deployed web")
    [card, answer] = pending.bot_posts(mattermost)
    assert card["id"] == pending.card["id"] and card["message"].startswith("**Approved** by @alice")
    assert answer["message"] == "done: deployed web"


async def test_the_decider_is_named_with_the_handle(mattermost: FakeMattermost, sqlite_url: str) -> None:
    alice = mattermost.add_user("alice", first_name="Alice", last_name="Smith")
    async with awaiting_decision(mattermost, sqlite_url, asker=alice) as pending:
        await mattermost.click(pending.card, alice, "approve")
        await mattermost.wait_for(lambda: pending.last_said(mattermost) == "done: deployed web")
    assert pending.current(mattermost)["message"].startswith("**Approved** by Alice Smith (@alice) at ")
    assert notices_to(mattermost, alice) == ["Approved by Alice Smith (@alice)."]
