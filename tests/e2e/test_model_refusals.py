"""A model provider's refusal says in the chat what the person can do: a set-up only the operator can fix (a refused
key, an unknown model) says so and that the operator was told, with one ERROR line naming the fix; an outage that
passes (a 5xx, a 429) says try again, after one bounded retry by the provider's client."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from gateway.agents.deadlines import PROVIDER_RETRIES
from gateway.pipeline.live_reply import PLACEHOLDER
from tests.support.fakes.model_server import FakeModelServer, Refusal
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway, said_by
from tests.support.scripted import answers

NOT_SET_UP = ("Sorry, I cannot answer: this bot is not set up correctly (a configuration problem). "
              "The operator has been told; trying again will not help until it is fixed.")


def try_again(kind: str) -> str:
    return (f"Sorry, the model could not answer right now ({kind}). Please try again in a moment. "
            "The operator can find the details in the gateway's log.")


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    refusal: Refusal
    notice: str
    level: int
    logged: str
    """What the one log line says besides the error: the fix, for the operator's mistakes."""
    attempts: int


CASES = [
    Case(id="wrong-key", refusal=Refusal(status=401, code="invalid_api_key", message="Incorrect API key provided"),
         notice=NOT_SET_UP, level=logging.ERROR, logged="fix: the provider refused the key", attempts=1),
    Case(id="unknown-model", refusal=Refusal(status=404, code="model_not_found",
                                             message="The model `gpt-4o-mnii` does not exist"),
         notice=NOT_SET_UP, level=logging.ERROR, logged="fix: the provider does not know this model", attempts=1),
    Case(id="server-error", refusal=Refusal(status=500, type="server_error", message="internal"),
         notice=try_again("ModelServerError"), level=logging.WARNING, logged="ModelServerError",
         attempts=1 + PROVIDER_RETRIES),
    Case(id="rate-limited", refusal=Refusal(status=429, code="rate_limit_exceeded", type="requests",
                                            message="Rate limit reached"),
         notice=try_again("ModelRateLimitError"), level=logging.WARNING, logged="ModelRateLimitError",
         attempts=1 + PROVIDER_RETRIES),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
async def test_a_refusal_says_whether_trying_again_can_help(telegram: FakeTelegram, sqlite_url: str, case: Case,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with FakeModelServer("error", refusal=case.refusal) as model:
        async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                                   model=answers("unused"), agent={"model": "remote"},
                                   top={"models": {"remote": model.profile()}}):
            await telegram.user_says(bot.token, chat, alice, "hi")
            await telegram.wait_for(lambda: said_by(telegram, chat, bot) not in ([], [PLACEHOLDER]), timeout=20)
        assert said_by(telegram, chat, bot) == [case.notice]
        assert model.requests == case.attempts
    [record] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert record.levelno == case.level and not record.exc_info
    assert case.logged in record.getMessage()
