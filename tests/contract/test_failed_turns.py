"""A turn never ends silent on any platform: whatever fails, the placeholder is edited into a notice in the
turn's own conversation, the run row records the failure and the log has one line; the same for a run
resumed after an approval."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from pydantic_ai.exceptions import UserError
from sqlalchemy import select

from gateway.pipeline.live_reply import PLACEHOLDER
from storage.db import Database
from storage.models import RunRow
from tests.contract.chats import Chat, chat_on
from tests.support.gated_tools import deploy_registry
from tests.support.scripted import calls_then_answers, fails

PLATFORMS = ["telegram", "slack", "mattermost"]
DETAILS = "The operator can find the details in the gateway's log."
CONFIGURATION = ("Sorry, I cannot answer: this bot is not set up correctly (a configuration problem). "
                 "The operator has been told; trying again will not help until it is fixed.")
INTERNAL = "Sorry, something went wrong on our side while answering (an internal error). " + DETAILS


@pytest_asyncio.fixture(params=PLATFORMS)
async def chat(request: pytest.FixtureRequest) -> AsyncIterator[Chat]:
    async with chat_on(request.param) as world:
        yield world


async def runs(database_url: str) -> list[tuple[str, str | None]]:
    db = Database(database_url)
    try:
        async with db.session() as session:
            return [(r.status, r.error) for r in (await session.execute(select(RunRow).order_by(RunRow.id))).scalars()]
    finally:
        await db.close()


def failure_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("gateway.")]


@pytest.mark.parametrize(("error", "notice", "traceback"), [
    pytest.param(UserError("Set the `OPENAI_API_KEY` environment variable"), CONFIGURATION, False,
                 id="configuration"),
    pytest.param(KeyError("conversation"), INTERNAL, True, id="a-bug-of-ours"),
])
async def test_a_failed_turn_edits_its_placeholder_into_a_notice(chat: Chat, sqlite_url: str, error: Exception,
                                                                 notice: str, traceback: bool,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    async with chat.running(sqlite_url, model=fails(error)):
        said = await chat.says(chat.group, "hi")
        await chat.wait_for(lambda: chat.answers(chat.group, said) not in ([], [PLACEHOLDER]))
    assert chat.answers(chat.group, said) == [notice]
    assert chat.sends() == 1, "the placeholder itself became the notice"
    [(status, recorded)] = await runs(sqlite_url)
    assert status == "failed" and recorded == f"{type(error).__name__}: {error}"
    [record] = failure_records(caplog)
    assert f"failed: {type(error).__name__}" in record.getMessage()
    assert bool(record.exc_info) is traceback


async def test_a_run_resumed_after_an_approval_that_fails_says_so(chat: Chat, sqlite_url: str,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    def broken(_results: list[str]) -> str:
        raise KeyError("deployment")

    executed: list[str] = []
    model = calls_then_answers(("deploy_service", {"service": "web"}), answer=broken)
    async with chat.running(sqlite_url, model=model, registry=deploy_registry(executed),
                            capabilities=[{"id": "deploy"}]):
        said = await chat.says(chat.group, "deploy web")
        await chat.wait_for(lambda: len(chat.cards(chat.group, said)) == 1)
        [card] = chat.cards(chat.group, said)
        await chat.approve(card)
        await chat.wait_for(lambda: chat.answers(chat.group, said)[-1:] == [INTERNAL])
        assert chat.is_closed_as_approved(card)
    assert executed == ["web"]
    assert await runs(sqlite_url) == [("failed", "KeyError: 'deployment'")]
    [record] = failure_records(caplog)
    assert "failed: KeyError" in record.getMessage() and record.exc_info
