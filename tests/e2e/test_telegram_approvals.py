"""Gated tool calls decided by buttons in Telegram: only by the people allowed, exactly once, across restarts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update
from typer.testing import CliRunner

from gateway.approvals.store import Approvals
from gateway.cli.main import app
from gateway.server.app import Gateway, Tuning
from storage.db import Database
from storage.models import ApprovalRow, ParkedRunRow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import FAST, TelegramBot, running_gateway
from tests.support.records import approval_statuses, make_overdue
from tests.support.scripted import calls_then_answers

DEPLOY = [{"id": "deploy"}]
DEPLOY_WEB: tuple[tuple[str, dict[str, object]], ...] = (("deploy_service", {"service": "web"}),)
NO_SWEEP = replace(FAST, expiry_interval=3600.0)
"""The expiry sweep never runs during a test: whatever expires, a click expired."""


def cards(telegram: FakeTelegram, chat_id: int) -> list[dict[str, Any]]:
    return [m for m in telegram.bot_messages(chat_id) if "Approval needed" in m.get("text", "")
            or m.get("reply_markup")]


def buttons(card: dict[str, Any]) -> dict[str, str]:
    return {b["text"]: b["callback_data"] for row in card["reply_markup"]["inline_keyboard"] for b in row}


def answers_to_clicks(telegram: FakeTelegram) -> list[dict[str, Any]]:
    return [c.params for c in telegram.calls if c.method == "answerCallbackQuery"]


def texts(telegram: FakeTelegram, chat_id: int) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat_id)]


@dataclass(frozen=True, slots=True, kw_only=True)
class Pending:
    bot: TelegramBot
    card: dict[str, Any]
    executed: list[str]
    gateway: Gateway


@asynccontextmanager
async def awaiting_decision(telegram: FakeTelegram, database_url: str, *, chat: dict[str, Any],
                            asker: dict[str, Any], text: str, binding: dict[str, Any] | None = None,
                            redis_url: str | None = None, transport: str = "polling", thread: int | None = None,
                            calls: tuple[tuple[str, dict[str, object]], ...] = DEPLOY_WEB,
                            tuning: Tuning = FAST, quiet_first: float = 0.0) -> AsyncIterator[Pending]:
    """A running gateway whose agent has asked to run `deploy_service`; the card is in the chat. `quiet_first`: seconds
    the gateway runs before the message is sent."""
    executed: list[str] = []
    bot = TelegramBot(binding=binding or {}, transport=transport).register(telegram)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=redis_url,
                               model=calls_then_answers(*calls), registry=deploy_registry(executed),
                               capabilities=DEPLOY, tuning=tuning) as gateway:
        await asyncio.sleep(quiet_first)
        await telegram.user_says(bot.token, chat, asker, text, message_thread_id=thread)
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
        yield Pending(bot=bot, card=cards(telegram, chat["id"])[0], executed=executed, gateway=gateway)


async def test_only_the_requester_decides_and_the_answer_continues_in_the_chat(
        telegram: FakeTelegram, database_url: str, redis_url: str | None) -> None:
    alice, mallory = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Mallory")
    forum = telegram.group(-4001, "Ops", forum=True)
    async with awaiting_decision(telegram, database_url, chat=forum, asker=alice, text="@helper_bot deploy web",
                                 thread=7, redis_url=redis_url) as pending:
        card = pending.card
        assert card["message_thread_id"] == 7 and '"service": "web"' in card["text"]
        await telegram.user_clicks(pending.bot.token, card, mallory, buttons(card)["✅ Approve"])
        await telegram.wait_for(lambda: len(answers_to_clicks(telegram)) == 1)
        assert answers_to_clicks(telegram)[0]["show_alert"] is True and pending.executed == []
        await telegram.user_clicks(pending.bot.token, card, alice, buttons(card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, forum["id"])[-1:] == ["done: deployed web"])
    assert pending.executed == ["web"]
    [closed] = [m for m in telegram.bot_messages(forum["id"]) if m["message_id"] == card["message_id"]]
    assert closed["text"].startswith("Approved by Alice") and not closed.get("reply_markup")
    assert telegram.bot_messages(forum["id"], thread_id=7) == telegram.bot_messages(forum["id"])


async def test_a_denial_is_told_to_the_model(telegram: FakeTelegram, sqlite_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, sqlite_url, chat=chat, asker=alice, text="deploy web") as pending:
        await telegram.user_clicks(pending.bot.token, pending.card, alice, buttons(pending.card)["✖️ Deny"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"))
    assert pending.executed == []
    assert texts(telegram, chat["id"])[-1] == "done: Alice denied this call; it was not run."


async def test_concurrent_and_repeated_clicks_decide_once(telegram: FakeTelegram, database_url: str) -> None:
    alice, bob = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Bob")
    group = telegram.group(-4002, "Ops")
    async with awaiting_decision(telegram, database_url, chat=group, asker=alice, text="@helper_bot deploy web",
                                 binding={"approvals": {"who": "room"}}) as pending:
        token, card = pending.bot.token, pending.card
        await asyncio.gather(telegram.user_clicks(token, card, alice, buttons(card)["✅ Approve"]),
                             telegram.user_clicks(token, card, bob, buttons(card)["✖️ Deny"]),
                             telegram.user_clicks(token, card, bob, buttons(card)["✅ Approve"]))
        await telegram.wait_for(lambda: len(answers_to_clicks(telegram)) == 3
                                and texts(telegram, group["id"])[-1].startswith("done:"))
    notices = sorted(a.get("text", "") for a in answers_to_clicks(telegram))
    assert sum(n.startswith("Already") for n in notices) == 2
    [status] = await approval_statuses(database_url)
    assert pending.executed == (["web"] if status == "approved" else []), "run once if approved, else never"


async def test_a_click_after_a_restart_resumes_the_parked_run(telegram: FakeTelegram, database_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, database_url, chat=chat, asker=alice, text="deploy web") as pending:
        pass
    await telegram.user_clicks(pending.bot.token, pending.card, alice, buttons(pending.card)["✅ Approve"])
    async with running_gateway(telegram, [pending.bot], database_url=database_url, redis_url=None,
                               model=calls_then_answers(*DEPLOY_WEB), registry=deploy_registry(pending.executed),
                               capabilities=DEPLOY):
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["done: deployed web"])
    assert pending.executed == ["web"]


def with_args(node: Any, tool_name: str, args: dict[str, object]) -> Any:
    """The stored JSON with every call of `tool_name` given other arguments (as a dict or a JSON string, as stored)."""
    if isinstance(node, list):
        return [with_args(item, tool_name, args) for item in node]
    if not isinstance(node, dict):
        return node
    changed = {key: with_args(value, tool_name, args) for key, value in node.items()}
    if changed.get("tool_name") == tool_name and "args" in changed:
        changed["args"] = json.dumps(args) if isinstance(changed["args"], str) else args
    return changed


async def change_parked_calls(database_url: str, tool_name: str, args: dict[str, object]) -> None:
    """Rewrite the parked runs' stored state, as someone with write access to the database could."""
    db = Database(database_url)
    try:
        async with db.session() as session:
            for parked_id, state in (await session.execute(select(ParkedRunRow.id, ParkedRunRow.state))).all():
                changed = json.dumps(with_args(json.loads(state), tool_name, args))
                assert changed != state, "the parked state holds the call"
                await session.execute(update(ParkedRunRow).where(ParkedRunRow.id == parked_id).values(state=changed))
    finally:
        await db.close()


async def test_a_call_changed_after_its_card_was_posted_is_denied_and_never_run(
        telegram: FakeTelegram, database_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, database_url, chat=chat, asker=alice, text="deploy web") as pending:
        assert '"service": "web"' in pending.card["text"]
        await change_parked_calls(database_url, "deploy_service", {"service": "prod"})
        await telegram.user_clicks(pending.bot.token, pending.card, alice, buttons(pending.card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"))
    assert pending.executed == []
    assert texts(telegram, chat["id"])[-1] == "done: The call changed after it was shown; it was not run."
    assert await approval_statuses(database_url) == ["approved"]


async def test_an_undecided_call_expires_and_the_card_says_so(telegram: FakeTelegram, sqlite_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, sqlite_url, chat=chat, asker=alice, text="deploy web",
                                 binding={"approvals": {"expires_after": 1}}) as pending:
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"), timeout=10)
        await telegram.user_clicks(pending.bot.token, pending.card, alice, buttons(pending.card)["✅ Approve"])
        await telegram.wait_for(lambda: len(answers_to_clicks(telegram)) == 1)
    assert pending.executed == []
    assert texts(telegram, chat["id"])[-1] == "done: Nobody approved this call before it expired, so it was not run."
    [closed] = [m for m in telegram.bot_messages(chat["id"]) if m["message_id"] == pending.card["message_id"]]
    assert closed["text"].startswith("Expired")
    assert answers_to_clicks(telegram)[0]["text"].startswith("Expired at ")


async def test_a_card_nobody_clicks_expires_at_its_time_not_at_the_next_sweep(telegram: FakeTelegram,
                                                                              database_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, database_url, chat=chat, asker=alice, text="deploy web", tuning=NO_SWEEP,
                                 binding={"approvals": {"expires_after": "PT3S"}}) as pending:
        # the sweep interval is an hour here: only the card's own expiry can close it within the wait
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"), timeout=15)
    closed = current(telegram, chat, pending.card)
    assert closed["text"].startswith("Expired") and not closed.get("reply_markup")
    assert pending.executed == [] and await approval_statuses(database_url) == ["expired"]


async def test_a_card_parked_after_the_sweep_last_looked_expires_at_its_time(telegram: FakeTelegram,
                                                                             sqlite_url: str) -> None:
    """The sweep asks when the next expiry falls due when it starts and whenever this process parks a run; it does
    not poll for it. A card parked after its first look (one second in) must wake it."""
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, sqlite_url, chat=chat, asker=alice, text="deploy web", tuning=NO_SWEEP,
                                 binding={"approvals": {"expires_after": "PT2S"}}, quiet_first=2.5) as pending:
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"), timeout=15)
    assert pending.executed == [] and await approval_statuses(sqlite_url) == ["expired"]


def current(telegram: FakeTelegram, chat: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """`message` as the chat shows it now."""
    [found] = [m for m in telegram.bot_messages(chat["id"]) if m["message_id"] == message["message_id"]]
    return found


async def test_a_click_after_the_expiry_is_refused_and_expires_the_card_then(telegram: FakeTelegram,
                                                                            database_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, database_url, chat=chat, asker=alice, text="deploy web",
                                 tuning=NO_SWEEP) as pending:
        await make_overdue(database_url)
        await telegram.user_clicks(pending.bot.token, pending.card, alice, buttons(pending.card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1].startswith("done:"))
    [answer] = answers_to_clicks(telegram)
    assert answer["show_alert"] is True and answer["text"].startswith("Expired at ")
    closed = current(telegram, chat, pending.card)
    assert closed["text"].startswith("Expired") and not closed.get("reply_markup")
    assert texts(telegram, chat["id"])[-1] == "done: Nobody approved this call before it expired, so it was not run."
    assert pending.executed == [] and await approval_statuses(database_url) == ["expired"]


async def test_clicks_racing_the_sweep_past_the_expiry_decide_once(telegram: FakeTelegram, database_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, database_url, chat=chat, asker=alice, text="deploy web") as pending:
        await make_overdue(database_url)  # the sweep runs every 0.3 s here: it races the clicks
        approve = buttons(pending.card)["✅ Approve"]
        await asyncio.gather(telegram.user_clicks(pending.bot.token, pending.card, alice, approve),
                             telegram.user_clicks(pending.bot.token, pending.card, alice, approve))
        await telegram.wait_for(lambda: len(answers_to_clicks(telegram)) == 2
                                and texts(telegram, chat["id"])[-1].startswith("done:"))
    assert [a["text"][:11] for a in answers_to_clicks(telegram)] == ["Expired at "] * 2
    assert sum(t.startswith("done:") for t in texts(telegram, chat["id"])) == 1, "the run resumed once"
    assert pending.executed == [] and await approval_statuses(database_url) == ["expired"]


async def test_a_gated_call_leaves_the_card_and_the_answer(telegram: FakeTelegram, sqlite_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, sqlite_url, chat=chat, asker=alice, text="deploy web") as pending:
        assert [m["message_id"] for m in telegram.bot_messages(chat["id"])] == [pending.card["message_id"]]
        await telegram.user_clicks(pending.bot.token, pending.card, alice, buttons(pending.card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["done: deployed web"])
    [card, answer] = telegram.bot_messages(chat["id"])
    assert card["message_id"] == pending.card["message_id"] and card["text"].startswith("Approved by Alice")
    assert answer["text"] == "done: deployed web"


async def test_the_decider_is_named_with_the_handle(telegram: FakeTelegram, sqlite_url: str) -> None:
    alice = telegram.add_user(1001, "Alice", last_name="Smith", username="alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, sqlite_url, chat=chat, asker=alice, text="deploy web") as pending:
        await telegram.user_clicks(pending.bot.token, pending.card, alice, buttons(pending.card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["done: deployed web"])
        await telegram.user_clicks(pending.bot.token, pending.card, alice, buttons(pending.card)["✖️ Deny"])
        await telegram.wait_for(lambda: len(answers_to_clicks(telegram)) == 2)
    assert current(telegram, chat, pending.card)["text"].startswith("Approved by Alice Smith (@alice) at ")
    assert [a["text"] for a in answers_to_clicks(telegram)] == ["Approved by Alice Smith (@alice).",
                                                                "Already approved by Alice Smith (@alice)."]


async def test_two_person_rule(telegram: FakeTelegram, sqlite_url: str) -> None:
    alice = telegram.add_user(1001, "Alice", username="alice")
    bob = telegram.add_user(1002, "Bob", username="bob")
    group = telegram.group(-4003, "Ops")
    rule = {"approvals": {"who": "approvers", "approvers": ["@alice", "@bob"], "required_approvals": 2}}
    async with awaiting_decision(telegram, sqlite_url, chat=group, asker=alice, text="@helper_bot deploy web",
                                 binding=rule) as pending:
        approve = buttons(pending.card)["✅ Approve"]
        await telegram.user_clicks(pending.bot.token, pending.card, alice, approve)
        await telegram.wait_for(lambda: len(answers_to_clicks(telegram)) == 1)
        assert answers_to_clicks(telegram)[0]["text"] == "Your approval is recorded (1 of 2)."
        assert pending.executed == []
        voted = current(telegram, group, pending.card)
        assert "Approved by Alice (@alice) (1 of 2)." in voted["text"] and buttons(voted)["✅ Approve"] == approve
        await telegram.user_clicks(pending.bot.token, pending.card, bob, approve)
        await telegram.wait_for(lambda: texts(telegram, group["id"])[-1:] == ["done: deployed web"])
    assert pending.executed == ["web"]
    closed = current(telegram, group, pending.card)
    assert closed["text"].startswith("Approved by Alice (@alice) and Bob (@bob) at ")
    assert not closed.get("reply_markup")


async def test_a_continuation_that_asks_again_posts_a_new_card(telegram: FakeTelegram, sqlite_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    two_calls = (("deploy_service", {"service": "web"}), ("deploy_service", {"service": "worker"}))
    async with awaiting_decision(telegram, sqlite_url, chat=chat, asker=alice, text="deploy everything",
                                 calls=two_calls) as pending:
        first = pending.card
        await telegram.user_clicks(pending.bot.token, first, alice, buttons(first)["✅ Approve"])
        def later_cards() -> list[dict[str, Any]]:
            return [c for c in cards(telegram, chat["id"]) if c["message_id"] != first["message_id"]]
        await telegram.wait_for(lambda: len(later_cards()) == 1)
        [second] = later_cards()
        assert '"service": "worker"' in second["text"]
        await telegram.user_clicks(pending.bot.token, second, alice, buttons(second)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["done: deployed worker"])
    assert pending.executed == ["web", "worker"]


async def test_a_click_without_the_webhook_secret_is_refused(telegram: FakeTelegram, sqlite_url: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, sqlite_url, chat=chat, asker=alice, text="deploy web",
                                 transport="webhook") as pending:
        card = pending.card
        forged = {"update_id": 999, "callback_query": {"id": "77", "from": alice, "chat_instance": "1",
                                                       "message": card, "data": buttons(card)["✅ Approve"]}}
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{pending.gateway.url}/telegram/{pending.bot.name}/webhook", json=forged)
    assert response.status_code == 403
    assert pending.executed == [] and await approval_statuses(sqlite_url) == ["pending"]


@pytest.mark.parametrize("data", ["ap:not-a-real-approval", "zz:whatever"])
async def test_clicks_on_unknown_buttons_change_nothing(telegram: FakeTelegram, sqlite_url: str, data: str) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, sqlite_url, chat=chat, asker=alice, text="deploy web") as pending:
        await telegram.user_clicks(pending.bot.token, pending.card, alice, data)
        if data.startswith("ap:"):
            await telegram.wait_for(lambda: len(answers_to_clicks(telegram)) == 1)
    assert pending.executed == [] and await approval_statuses(sqlite_url) == ["pending"]


async def test_the_audit_lists_decisions(telegram: FakeTelegram, sqlite_url: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, sqlite_url, chat=chat, asker=alice, text="deploy web") as pending:
        await telegram.user_clicks(pending.bot.token, pending.card, alice, buttons(pending.card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1:] == ["done: deployed web"])
    monkeypatch.setenv("DATABASE_URL", sqlite_url)
    output = await asyncio.to_thread(lambda: CliRunner().invoke(app, ["approvals"]).output)
    assert 'approved deploy_service({"service": "web"}) asked by Alice, by Alice at' in output


async def test_the_swap_itself_refuses_an_approval_past_the_expiry(telegram: FakeTelegram, database_url: str) -> None:
    """A click that looked before the expiry and swaps after it is refused by the compare-and-swap too."""
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with awaiting_decision(telegram, database_url, chat=chat, asker=alice, text="deploy web",
                                 tuning=NO_SWEEP) as pending:
        await make_overdue(database_url)
        db = Database(database_url)
        try:
            async with db.session() as session:
                approval_id = (await session.execute(select(ApprovalRow.id))).scalar_one()
            store = Approvals(db)
            assert await store.decide(approval_id, "approved", "Alice") is None
            expired = await store.decide(approval_id, "expired", None)
        finally:
            await db.close()
    assert expired is not None and expired.status == "expired"
    assert pending.executed == [] and await approval_statuses(database_url) == ["expired"]
