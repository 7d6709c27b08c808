"""Gated tool calls decided by Block Kit buttons in a Slack thread, by the people allowed, once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import urlencode

import pytest

from gateway.server.app import Tuning
from tests.support.fakes.slack import FakeSlack
from tests.support.gated_tools import deploy_registry
from tests.support.harness import FAST
from tests.support.records import approval_statuses, make_overdue
from tests.support.scripted import calls_then_answers
from tests.support.slack_harness import SlackBot, running_gateway

DEPLOY = [{"id": "deploy"}]
DEPLOY_WEB: tuple[tuple[str, dict[str, object]], ...] = (("deploy_service", {"service": "web"}),)
APPROVE, DENY, ASK_REASON = "approval:approve", "approval:deny", "approval:ask_reason"
NO_SWEEP = replace(FAST, expiry_interval=3600.0)
"""The expiry sweep never runs during a test: whatever expires, a click expired."""


def cards(slack: FakeSlack, channel: dict, bot: SlackBot, thread_ts: str | None = None) -> list[dict[str, Any]]:
    return [m for m in slack.messages(channel, thread_ts=thread_ts)
            if m.get("user") == bot.user_id and "Approval needed" in m["text"]]


def buttons(card: dict[str, Any]) -> list[str]:
    return [e["action_id"] for block in card.get("blocks") or [] for e in block.get("elements") or []]


@dataclass(frozen=True, slots=True, kw_only=True)
class Pending:
    bot: SlackBot
    channel: dict[str, Any]
    thread_ts: str
    """The thread the request started, where the card and the answer go."""
    card: dict[str, Any]
    executed: list[str]
    shown_at: int
    """How many API calls Slack had seen when the card was shown."""

    def card_updates(self, slack: FakeSlack) -> list[dict[str, Any]]:
        """The `chat.update` calls that edited the card since it was shown."""
        return [c.params for c in slack.calls[self.shown_at:]
                if c.method == "chat.update" and c.params.get("ts") == self.card["ts"]]

    def replies(self, slack: FakeSlack) -> list[str]:
        """What the bot has written in the thread, oldest first."""
        return slack.texts(self.channel, by=self.bot.app, thread_ts=self.thread_ts)

    def later_cards(self, slack: FakeSlack) -> list[dict[str, Any]]:
        return [c for c in cards(slack, self.channel, self.bot, self.thread_ts) if c["ts"] != self.card["ts"]]

    def current_card(self, slack: FakeSlack) -> dict[str, Any]:
        [card] = [m for m in slack.messages(self.channel, thread_ts=self.thread_ts) if m["ts"] == self.card["ts"]]
        return card


@asynccontextmanager
async def serving(slack: FakeSlack, bot: SlackBot, database_url: str, executed: list[str],
                  calls: tuple[tuple[str, dict[str, object]], ...] = DEPLOY_WEB,
                  tuning: Tuning = FAST) -> AsyncIterator[None]:
    """A gateway process for `bot` whose agent calls `deploy_service` as scripted, then answers."""
    async with running_gateway(slack, [bot], database_url=database_url, redis_url=None,
                               model=calls_then_answers(*calls), registry=deploy_registry(executed),
                               capabilities=DEPLOY, tuning=tuning):
        yield


@asynccontextmanager
async def awaiting_decision(slack: FakeSlack, database_url: str, *, asker: dict[str, Any],
                            others: tuple[dict[str, Any], ...] = (), binding: dict[str, Any] | None = None,
                            transport: Literal["socket", "http"] = "socket",
                            calls: tuple[tuple[str, dict[str, object]], ...] = DEPLOY_WEB,
                            tuning: Tuning = FAST) -> AsyncIterator[Pending]:
    """A running gateway whose agent, asked by `asker` in #ops, wants to run `deploy_service`; the card is
    in the request's thread."""
    executed: list[str] = []
    bot = SlackBot(app=slack.add_app("helper"), transport=transport, binding=binding or {})
    ops = slack.add_channel("ops", members=[asker, *others, bot.app])
    async with serving(slack, bot, database_url, executed, calls, tuning):
        said = await slack.user_says(ops, asker, f"{bot.mention} deploy web")
        await slack.wait_for(lambda: len(cards(slack, ops, bot, said["ts"])) == 1)
        [card] = cards(slack, ops, bot, said["ts"])
        yield Pending(bot=bot, channel=ops, thread_ts=said["ts"], card=card, executed=executed,
                      shown_at=len(slack.calls))


@pytest.mark.parametrize("transport", ["socket", "http"])
async def test_only_the_requester_decides_and_the_answer_continues_in_the_thread(
        slack: FakeSlack, sqlite_url: str, transport: Literal["socket", "http"]) -> None:
    alice, mallory = slack.add_user("alice", real_name="Alice"), slack.add_user("mallory", real_name="Mallory")
    async with awaiting_decision(slack, sqlite_url, asker=alice, others=(mallory,), transport=transport) as pending:
        card = pending.card
        assert buttons(card) == [APPROVE, DENY, ASK_REASON] and '"service": "web"' in card["text"]
        await slack.user_clicks(pending.bot.app, card, mallory, APPROVE)
        await slack.wait_for(lambda: len(slack.ephemeral) == 1)
        assert slack.ephemeral[0]["user"] == mallory["id"] and pending.executed == []
        assert pending.card_updates(slack) == []
        await slack.user_clicks(pending.bot.app, card, alice, APPROVE)
        await slack.wait_for(lambda: pending.replies(slack)[-1:] == ["done: deployed web"])
    assert pending.executed == ["web"]
    closed = pending.current_card(slack)
    assert closed["text"].startswith("*Approved* by Alice") and buttons(closed) == []
    assert [e["thread_ts"] for e in slack.ephemeral] == [pending.thread_ts, pending.thread_ts]


async def test_a_denial_is_told_to_the_model(slack: FakeSlack, sqlite_url: str) -> None:
    alice = slack.add_user("alice", real_name="Alice")
    async with awaiting_decision(slack, sqlite_url, asker=alice) as pending:
        await slack.user_clicks(pending.bot.app, pending.card, alice, DENY)
        await slack.wait_for(lambda: pending.replies(slack)[-1].startswith("done:"))
    assert pending.executed == []
    assert pending.replies(slack)[-1] == "done: Alice (@alice) denied this call; it was not run."


async def test_concurrent_clicks_decide_once(slack: FakeSlack, database_url: str) -> None:
    alice, bob = slack.add_user("alice", real_name="Alice"), slack.add_user("bob", real_name="Bob")
    async with awaiting_decision(slack, database_url, asker=alice, others=(bob,), transport="http",
                                 binding={"approvals": {"who": "room"}}) as pending:
        app, card = pending.bot.app, pending.card
        await asyncio.gather(slack.user_clicks(app, card, alice, APPROVE),
                             slack.user_clicks(app, card, bob, DENY),
                             slack.user_clicks(app, card, bob, APPROVE))
        await slack.wait_for(lambda: len(slack.ephemeral) == 3 and pending.replies(slack)[-1].startswith("done:"))
    assert sum(e["text"].startswith("Already") for e in slack.ephemeral) == 2
    [status] = await approval_statuses(database_url)
    assert pending.executed == (["web"] if status == "approved" else []), "run once if approved, else never"
    assert len(pending.card_updates(slack)) == 1


async def test_a_click_after_a_restart_resumes_the_parked_run(slack: FakeSlack, database_url: str) -> None:
    alice = slack.add_user("alice", real_name="Alice")
    async with awaiting_decision(slack, database_url, asker=alice) as pending:
        pass
    # No process holds the socket now: Slack keeps the click and sends it on the next connection.
    await slack.user_clicks(pending.bot.app, pending.card, alice, APPROVE)
    async with serving(slack, pending.bot, database_url, pending.executed):
        await slack.wait_for(lambda: pending.replies(slack)[-1:] == ["done: deployed web"])
    assert pending.executed == ["web"]


async def test_an_undecided_call_expires_and_the_card_says_so(slack: FakeSlack, sqlite_url: str) -> None:
    alice = slack.add_user("alice", real_name="Alice")
    async with awaiting_decision(slack, sqlite_url, asker=alice,
                                 binding={"approvals": {"expires_after": 1}}) as pending:
        await slack.wait_for(lambda: pending.replies(slack)[-1].startswith("done:"), timeout=10)
        await slack.user_clicks(pending.bot.app, pending.card, alice, APPROVE)  # on the buttons still shown
        await slack.wait_for(lambda: len(slack.ephemeral) == 1)
    assert pending.executed == []
    assert pending.replies(slack)[-1] == "done: Nobody approved this call before it expired, so it was not run."
    closed = pending.current_card(slack)
    assert closed["text"].startswith("*Expired*") and buttons(closed) == []
    [(told, notice)] = [(e["user"], e["text"]) for e in slack.ephemeral]
    assert told == alice["id"] and notice.startswith("Expired at ") and notice.endswith("the call was not run.")


async def test_a_click_with_a_forged_signature_is_refused(slack: FakeSlack, sqlite_url: str) -> None:
    alice = slack.add_user("alice", real_name="Alice")
    async with awaiting_decision(slack, sqlite_url, asker=alice, transport="http") as pending:
        app = pending.bot.app
        body = urlencode({"payload": json.dumps(slack.click_payload(app, pending.card, alice, APPROVE))}).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded",
                   **slack.signed_headers(app, body, secret="not-the-signing-secret")}
        status, _ = await slack.post_to_app(app, body, headers, url=app.interactivity_url)
    assert status == 403
    assert pending.executed == [] and await approval_statuses(sqlite_url) == ["pending"]


async def test_two_person_rule(slack: FakeSlack, sqlite_url: str) -> None:
    alice, bob = slack.add_user("alice", real_name="Alice"), slack.add_user("bob", real_name="Bob")
    rule = {"approvals": {"who": "approvers", "approvers": [alice["id"], bob["id"]], "required_approvals": 2}}
    async with awaiting_decision(slack, sqlite_url, asker=alice, others=(bob,), binding=rule) as pending:
        await slack.user_clicks(pending.bot.app, pending.card, alice, APPROVE)
        await slack.wait_for(lambda: len(slack.ephemeral) == 1)
        assert slack.ephemeral[0]["text"] == "Your approval is recorded (1 of 2)." and pending.executed == []
        voted = pending.current_card(slack)
        assert "Approved by Alice (@alice) (1 of 2)." in voted["text"] and buttons(voted) == [APPROVE, DENY, ASK_REASON]
        await slack.user_clicks(pending.bot.app, pending.card, bob, APPROVE)
        await slack.wait_for(lambda: pending.replies(slack)[-1:] == ["done: deployed web"])
    assert pending.executed == ["web"]
    assert pending.current_card(slack)["text"].startswith("*Approved* by Alice (@alice) and Bob (@bob) at ")


async def test_a_continuation_that_asks_again_posts_a_new_card(slack: FakeSlack, sqlite_url: str) -> None:
    alice = slack.add_user("alice", real_name="Alice")
    two_calls = (("deploy_service", {"service": "web"}), ("deploy_service", {"service": "worker"}))
    async with awaiting_decision(slack, sqlite_url, asker=alice, calls=two_calls) as pending:
        await slack.user_clicks(pending.bot.app, pending.card, alice, APPROVE)
        await slack.wait_for(lambda: len(pending.later_cards(slack)) == 1)
        [second] = pending.later_cards(slack)
        assert '"service": "worker"' in second["text"] and buttons(second) == [APPROVE, DENY, ASK_REASON]
        await slack.user_clicks(pending.bot.app, second, alice, APPROVE)
        await slack.wait_for(lambda: pending.replies(slack)[-1:] == ["done: deployed worker"])
    assert pending.executed == ["web", "worker"]


async def test_a_click_after_the_expiry_is_refused_and_expires_the_card_then(slack: FakeSlack,
                                                                            sqlite_url: str) -> None:
    alice = slack.add_user("alice", real_name="Alice")
    async with awaiting_decision(slack, sqlite_url, asker=alice, tuning=NO_SWEEP) as pending:
        await make_overdue(sqlite_url)
        await slack.user_clicks(pending.bot.app, pending.card, alice, APPROVE)
        await slack.wait_for(lambda: pending.replies(slack)[-1].startswith("done:"))
    [notice] = slack.ephemeral
    assert notice["user"] == alice["id"] and notice["text"].startswith("Expired at ")
    closed = pending.current_card(slack)
    assert closed["text"].startswith("*Expired*") and buttons(closed) == []
    assert pending.replies(slack)[-1] == "done: Nobody approved this call before it expired, so it was not run."
    assert pending.executed == []


async def test_a_gated_call_leaves_the_card_and_the_answer(slack: FakeSlack, sqlite_url: str) -> None:
    alice = slack.add_user("alice", real_name="Alice")
    async with awaiting_decision(slack, sqlite_url, asker=alice) as pending:
        await slack.user_clicks(pending.bot.app, pending.card, alice, APPROVE)
        await slack.wait_for(lambda: pending.replies(slack)[-1:] == ["done: deployed web"])
    [card, answer] = [m for m in slack.messages(pending.channel, thread_ts=pending.thread_ts)
                      if m.get("user") == pending.bot.user_id]
    assert card["ts"] == pending.card["ts"] and card["text"].startswith("*Approved* by Alice")
    assert answer["text"] == "done: deployed web"


async def test_the_decider_is_named_with_the_handle(slack: FakeSlack, sqlite_url: str) -> None:
    alice = slack.add_user("alice", real_name="Alice Smith")
    async with awaiting_decision(slack, sqlite_url, asker=alice) as pending:
        await slack.user_clicks(pending.bot.app, pending.card, alice, APPROVE)
        await slack.wait_for(lambda: pending.replies(slack)[-1:] == ["done: deployed web"])
        await slack.user_clicks(pending.bot.app, pending.card, alice, DENY)
        await slack.wait_for(lambda: len(slack.ephemeral) == 2)
    assert pending.current_card(slack)["text"].startswith("*Approved* by Alice Smith (@alice) at ")
    assert [e["text"] for e in slack.ephemeral] == ["Approved by Alice Smith (@alice).",
                                                    "Already approved by Alice Smith (@alice)."]
