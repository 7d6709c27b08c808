"""What a Slack approval card offers (`approval_options`): approval for the conversation, and Deny with a reason typed
in a modal, which the model reads as the denied call's result."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode

from tests.support.deploy_model import Deployer
from tests.support.fakes.slack import FakeSlack
from tests.support.gated_tools import deploy_registry
from tests.support.records import approval_rows
from tests.support.slack_harness import SlackBot, running_gateway

DEPLOY = [{"id": "deploy"}]
APPROVE, HERE, DENY, REASON = ("approval:approve", "approval:approve_conversation", "approval:deny",
                               "approval:ask_reason")
ALL_OPTIONS = {"approval_options": ["once", "conversation", "deny"]}


def cards(slack: FakeSlack, channel: dict[str, Any], bot: SlackBot, thread_ts: str) -> list[dict[str, Any]]:
    """The bot's approval cards in the thread, open or closed."""
    return [m for m in slack.messages(channel, thread_ts=thread_ts)
            if m.get("user") == bot.user_id and "`deploy_service` with:" in m["text"]]


def buttons(card: dict[str, Any]) -> list[str]:
    return [e["action_id"] for block in card.get("blocks") or [] for e in block.get("elements") or []]


@dataclass(kw_only=True)
class Ops:
    slack: FakeSlack
    bot: SlackBot
    channel: dict[str, Any]
    executed: list[str]
    deployer: Deployer

    async def ask(self, user: dict[str, Any], text: str, *, thread_ts: str | None = None) -> str:
        """`user` mentions the bot with `text` (in `thread_ts`, or starting a thread); returns the thread."""
        said = await self.slack.user_says(self.channel, user, f"{self.bot.mention} {text}", thread_ts=thread_ts)
        return thread_ts or said["ts"]

    def replies(self, thread_ts: str) -> list[str]:
        return self.slack.texts(self.channel, by=self.bot.app, thread_ts=thread_ts)

    async def card(self, thread_ts: str, count: int = 1) -> dict[str, Any]:
        await self.slack.wait_for(lambda: len(cards(self.slack, self.channel, self.bot, thread_ts)) == count)
        return cards(self.slack, self.channel, self.bot, thread_ts)[-1]

    async def answered(self, thread_ts: str, count: int) -> None:
        await self.slack.wait_for(lambda: sum(t.startswith("done:") for t in self.replies(thread_ts)) == count)


@asynccontextmanager
async def ops(slack: FakeSlack, database_url: str, people: list[dict[str, Any]], binding: dict[str, Any], *,
              transport: Literal["socket", "http"] = "socket") -> AsyncIterator[Ops]:
    executed: list[str] = []
    deployer = Deployer()
    bot = SlackBot(app=slack.add_app("helper"), binding=binding, transport=transport)
    channel = slack.add_channel("ops", members=[*people, bot.app])
    async with running_gateway(slack, [bot], database_url=database_url, redis_url=None, model=deployer.model,
                               registry=deploy_registry(executed), capabilities=DEPLOY):
        yield Ops(slack=slack, bot=bot, channel=channel, executed=executed, deployer=deployer)


async def test_approved_for_the_conversation_the_same_call_runs_again_without_a_card(
        slack: FakeSlack, database_url: str) -> None:
    alice = slack.add_user("alice", real_name="Alice")
    async with ops(slack, database_url, [alice], ALL_OPTIONS) as room:
        thread = await room.ask(alice, "deploy web")
        card = await room.card(thread)
        assert buttons(card) == [APPROVE, HERE, DENY, REASON]
        await slack.user_clicks(room.bot.app, card, alice, HERE)
        await room.answered(thread, 1)
        assert slack.ephemeral[-1]["text"] == "Approved for this conversation by Alice (@alice)."

        await room.ask(alice, "deploy web", thread_ts=thread)  # the same call: no card
        await room.answered(thread, 2)
        assert len(cards(slack, room.channel, room.bot, thread)) == 1
        assert room.replies(thread)[-2] == ("Running `deploy_service` without asking: Alice (@alice) approved the "
                                            "same call for this conversation.")
        assert room.executed == ["web", "web"]

        await room.ask(alice, "deploy api", thread_ts=thread)  # other arguments: asked again
        await room.card(thread, count=2)
        other = await room.ask(alice, "deploy web")  # another conversation: asked again
        await room.card(other)
        assert room.executed == ["web", "web"]
    rows = await approval_rows(database_url)
    assert [(r.status, r.scope) for r in rows] == [("approved", "conversation"), ("approved", None),
                                                   ("pending", None), ("pending", None)]
    assert rows[1].decided_by == "Alice (@alice), for this conversation"


async def test_a_two_person_card_never_offers_the_conversation(slack: FakeSlack, sqlite_url: str) -> None:
    alice, bob = slack.add_user("alice", real_name="Alice"), slack.add_user("bob", real_name="Bob")
    binding = {"approvals": {"who": "room", "required_approvals": 2}}
    async with ops(slack, sqlite_url, [alice, bob], binding, transport="http") as room:
        thread = await room.ask(alice, "deploy web")
        card = await room.card(thread)
        assert buttons(card) == [APPROVE, DENY, REASON]
        # A click the card never offered, signed as Slack signs it: refused, nothing decided, nothing granted.
        forged = slack.click_payload(room.bot.app, card, bob, APPROVE)
        forged["actions"][0]["action_id"] = HERE
        body = urlencode({"payload": json.dumps(forged)}).encode()
        status, _ = await slack.post_to_app(
            room.bot.app, body, {"Content-Type": "application/x-www-form-urlencoded",
                                 **slack.signed_headers(room.bot.app, body)},
            url=room.bot.app.interactivity_url)
        assert status == 200
        await slack.wait_for(lambda: len(slack.ephemeral) == 1)
        assert slack.ephemeral[0]["text"] == "This card does not offer that."
    [row] = await approval_rows(sqlite_url)
    assert (row.status, row.scope, room.executed) == ("pending", None, [])


async def test_a_reason_typed_in_the_modal_reaches_the_model(slack: FakeSlack, database_url: str) -> None:
    alice, mallory = slack.add_user("alice", real_name="Alice"), slack.add_user("mallory", real_name="Mallory")
    async with ops(slack, database_url, [alice, mallory], {}) as room:
        thread = await room.ask(alice, "deploy web")
        card = await room.card(thread)
        await slack.user_clicks(room.bot.app, card, mallory, REASON)  # not hers to decide: no modal
        await slack.wait_for(lambda: len(slack.ephemeral) == 1)
        assert slack.views == [] and slack.ephemeral[0]["user"] == mallory["id"]

        await slack.user_clicks(room.bot.app, card, alice, REASON)
        await slack.wait_for(lambda: len(slack.views) == 1)
        [view] = slack.views
        assert view["user"] == alice["id"] and view["callback_id"] == "approval:reason"
        # Someone else submitting the modal opened for Alice changes nothing.
        acked = len(room.bot.app.acked)
        await slack.user_submits(room.bot.app, view, mallory, {"reason": {"reason": "ship it anyway"}})
        await slack.wait_for(lambda: len(room.bot.app.acked) > acked)
        assert [r.status for r in await approval_rows(database_url)] == ["pending"]

        await slack.user_submits(room.bot.app, view, alice, {"reason": {"reason": "Prod is frozen until Monday."}})
        await room.answered(thread, 1)
    assert room.executed == []
    [result] = room.deployer.tool_results()
    assert result.startswith("Alice (@alice) denied this call; it was not run. Their reason, in their own words")
    assert "<reason>\nProd is frozen until Monday.\n</reason>" in result
    [row] = await approval_rows(database_url)
    assert (row.status, row.reason) == ("denied", "Prod is frozen until Monday.")
    closed = next(m for m in slack.messages(room.channel, thread_ts=thread) if m["ts"] == card["ts"])
    assert closed["text"].startswith("*Denied with a reason* by Alice") and buttons(closed) == []
