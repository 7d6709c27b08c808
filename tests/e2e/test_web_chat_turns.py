"""One chat turn per web capability through the fake Telegram, with a scripted model: the search answers from a
loopback Tavily with the operator's key (which no log line shows), the fetch reads a loopback page (reachable
only because the development switch is set for the test)."""

from __future__ import annotations

import logging

import pytest

from tests.support.fakes.pages import FakePages
from tests.support.fakes.search import FakeSearch
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask, running_gateway
from tests.support.scripted import calls_then_answers

KEY = "tvly-chat-turn-key-9f8e7d6c5b"


def last(returned: list[str]) -> str:
    return returned[-1]


async def test_a_search_in_a_chat_answers_from_tavily_and_no_log_line_shows_the_key(
        telegram: FakeTelegram, database_url: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    model = calls_then_answers(("web_search", {"query": "pydantic ai"}), answer=last)
    entry = {"id": "web_research", "config": {"method": "tavily", "max_results": 2}, "secret_id": "TAVILY_API_KEY"}
    async with FakeSearch(key=KEY) as search:
        monkeypatch.setenv("GATEWAY_TAVILY_URL", search.url)
        async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                                   capabilities=[entry], secrets={"TAVILY_API_KEY": KEY}):
            answer = await ask(telegram, bot, chat, alice, "what is pydantic ai?")
            logging.getLogger("probe").warning("a library that logs its request headers: Bearer %s", KEY)
    assert "Results for 'pydantic ai' from Tavily" in answer and "1. Pydantic AI" in answer
    assert [seen.headers["Authorization"] for seen in search.seen] == [f"Bearer {KEY}"]
    lines = [record.getMessage() for record in caplog.records]
    assert "a library that logs its request headers: Bearer ***" in lines
    assert not [line for line in lines if KEY in line]
    assert not [m for m in telegram.bot_messages(chat["id"]) if KEY in m["text"]]


async def test_a_fetch_in_a_chat_reads_the_page(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with FakePages() as pages:
        model = calls_then_answers(("web_fetch", {"url": f"{pages.url}/page"}), answer=last)
        async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                                   capabilities=[{"id": "web_fetch", "config": {"allowed_domains": ["LocalHost."]}}],
                                   environment={"GATEWAY_DEV_WEB_FETCH_ALLOW_LOCAL": "true"}):
            answer = await ask(telegram, bot, chat, alice, "read the release notes")
    assert "Release notes" in answer and "Version 2" in answer
    assert pages.requested == ["/page"]
