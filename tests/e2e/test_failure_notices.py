"""A turn never ends silent: whatever fails, the placeholder becomes a notice saying what kind of failure it was,
the run row records it, the log has one line (a traceback only for a bug of ours), and nothing is retried."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai.models import Model
from sqlalchemy import select

from gateway.pipeline.live_reply import PLACEHOLDER
from storage.db import Database
from storage.models import InboxRow, RunRow
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import answers, calls_then_answers, fails

CONFIGURATION = ("Sorry, I cannot answer: this bot is not set up correctly (a configuration problem). "
                 "The operator has been told; trying again will not help until it is fixed.")
INTERNAL = ("Sorry, something went wrong on our side while answering (an internal error). "
            "The operator can find the details in the gateway's log.")


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    model: str
    """The agent's model: a string the resolver has no scripted model for resolves through pydantic-ai."""
    scripted: Model
    notice: str
    error: str
    traceback: bool


CASES = [
    Case(id="unknown-provider", model="opneai:gpt-4o-mini", scripted=answers("unused"), notice=CONFIGURATION,
         error="UserError: Unknown model: opneai:gpt-4o-mini. Did you mean 'openai:gpt-4o-mini'?", traceback=False),
    Case(id="key-not-set", model="openai:gpt-4o-mini", scripted=answers("unused"), notice=CONFIGURATION,
         error="UserError: Set the `OPENAI_API_KEY` environment variable", traceback=False),
    Case(id="a-bug-of-ours", model="function:scripted", scripted=fails(KeyError("conversation")), notice=INTERNAL,
         error="KeyError: 'conversation'", traceback=True),
]


async def stored(database_url: str, row: type[Any]) -> list[Any]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return list((await session.execute(select(row))).scalars())
    finally:
        await db.close()


def texts(telegram: FakeTelegram, chat_id: int) -> list[str]:
    return [m["text"] for m in telegram.bot_messages(chat_id)]


def failure_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("gateway.pipeline")]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
async def test_a_failed_turn_edits_the_placeholder_into_a_notice_and_is_not_retried(
        telegram: FakeTelegram, sqlite_url: str, case: Case, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=case.scripted,
                               agent={"model": case.model}):
        await telegram.user_says(bot.token, chat, alice, "hi")
        await telegram.wait_for(lambda: texts(telegram, chat["id"]) not in ([], [PLACEHOLDER]))
    assert texts(telegram, chat["id"]) == [case.notice]
    [run] = await stored(sqlite_url, RunRow)
    assert run.status == "failed" and (run.error or "").startswith(case.error)
    [inbox] = await stored(sqlite_url, InboxRow)
    assert (inbox.status, inbox.attempts) == ("done", 1)
    [record] = failure_records(caplog)
    assert record.getMessage().startswith(f"run {run.id} for bot {bot.name!r} failed: {case.error}")
    assert bool(record.exc_info) is case.traceback


async def test_a_resumed_run_that_fails_says_so_in_the_chat(telegram: FakeTelegram, sqlite_url: str,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    def broken(_results: list[str]) -> str:
        raise KeyError("deployment")

    executed: list[str] = []
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    model = calls_then_answers(("deploy_service", {"service": "web"}), answer=broken)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=model,
                               registry=deploy_registry(executed), capabilities=[{"id": "deploy"}]):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: any(m.get("reply_markup") for m in telegram.bot_messages(chat["id"])))
        [card] = [m for m in telegram.bot_messages(chat["id"]) if m.get("reply_markup")]
        approve = next(b["callback_data"] for row in card["reply_markup"]["inline_keyboard"] for b in row
                       if b["text"] == "✅ Approve")
        await telegram.user_clicks(bot.token, card, alice, approve)
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1] == INTERNAL)
    assert executed == ["web"]
    runs = await stored(sqlite_url, RunRow)
    assert [(r.status, r.error) for r in runs] == [("failed", "KeyError: 'deployment'")]
    assert len(failure_records(caplog)) == 1
