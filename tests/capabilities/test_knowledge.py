"""`knowledge`: search_documents over the collections a spec binds, cited, and absent when nothing is searchable."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest_asyncio
from pydantic_ai import AgentRunResult

from capabilities.knowledge.services import bind
from capabilities.knowledge.store import FullTextRanker, KnowledgeSearch, KnowledgeStore
from capabilities.run import Deployment, KnowledgeScope
from gateway.config.schema import GatewayConfig
from gateway.config.secrets import SecretSource
from storage.db import Database
from storage.migrate import upgrade
from tests.support.bound_runs import Seen, calling
from tests.support.capability_runs import assembled, binding_with, recording, run, tool_defs
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask
from tests.support.harness import running_gateway as telegram_gateway
from tests.support.mattermost_harness import MattermostBot
from tests.support.mattermost_harness import running_gateway as mattermost_gateway
from tests.support.slack_harness import SlackBot, running_gateway

REFUNDS = "# Refund policy\n\nCustomers may ask for a refund within 30 days. Gift cards are never refunded."
MINUTES = "# Board minutes\n\nThe refund reserve for next year is twelve million."
HANDBOOK_AND_BOARD = {"collections": [{"name": "handbook"}, {"name": "board"}, {"name": "empty"}]}


def numbers(passages: str) -> list[str]:
    """The citation numbers heading the passages of a search result."""
    return re.findall(r"^\[(\d+)\] ", passages, re.MULTILINE)


async def fill(db: Database) -> None:
    store = KnowledgeStore(db)
    await store.add("handbook", "handbook/refunds.md", "Refund policy", REFUNDS)
    await store.add("handbook", "handbook/gifts.md", "Gift cards", "Gift cards expire after a year.")
    await store.add("board", "board/minutes.md", "Board minutes", MINUTES)


@pytest_asyncio.fixture
async def filled(db: Database) -> AsyncIterator[Database]:
    await fill(db)
    yield db


def config_binding(*collections: str) -> GatewayConfig:
    return GatewayConfig.model_validate({**HANDBOOK_AND_BOARD, "bots": [], "agents": [
        {"name": "assistant", "model": "scripted", "capabilities": ["knowledge"], "collections": list(collections)}]})


async def run_bound(db: Database, collections: Sequence[str], calls: Sequence[tuple[str, dict[str, object]]],
                    config: dict[str, object] | None = None) -> tuple[AgentRunResult[Any], Seen]:
    """A run of an agent binding `collections`, its facts resolved as the runtime resolves them."""
    gateway_config = config_binding(*collections)
    services = bind(Deployment(db=db, config=gateway_config, settings=None, secrets=SecretSource(environ={})))
    model, seen = calling(calls)
    binding = binding_with([{"id": "knowledge", "config": config or {}}], instructions="Be helpful.")
    facts = {"knowledge_services": services, "collections": collections}
    result = await run(assembled(binding, model, facts=facts), "hi", binding=binding)
    return result, seen


async def test_a_spec_bound_to_one_collection_never_sees_another(filled: Database) -> None:
    _result, seen = await run_bound(filled, ["handbook"], [("search_documents", {"query": "reserve"}),
                                                           ("search_documents", {"query": "refund"})])
    missing, found = seen.returns
    assert missing.startswith("No passage matches 'reserve'")
    assert "board/minutes.md" not in found and "handbook/refunds.md" in found
    _result, seen = await run_bound(filled, ["board"], [("search_documents", {"query": "reserve"})])
    assert seen.returns[0].startswith("[1] Board minutes (board/minutes.md, part 1 of 1)")


async def test_passages_are_numbered_with_their_source_for_the_answer_to_cite(filled: Database) -> None:
    _result, seen = await run_bound(filled, ["handbook"], [("search_documents", {"query": "gift cards"})])
    assert numbers(seen.returns[0]) == ["1", "2"]
    assert "(handbook/gifts.md, part 1 of 1)" in seen.returns[0] and "**Gift**" in seen.returns[0]
    assert "cite each passage you used by its number, e.g. [1]" in (seen.instructions[0] or "")


async def test_default_top_k_applies_only_when_the_model_asks_for_no_number(filled: Database) -> None:
    calls = [("search_documents", {"query": "gift"}), ("search_documents", {"query": "gift", "top_k": 2})]
    _result, seen = await run_bound(filled, ["handbook"], calls, config={"default_top_k": 1})
    assert [numbers(r) for r in seen.returns] == [["1"], ["1", "2"]]


async def test_a_top_k_out_of_range_is_retried(filled: Database) -> None:
    _result, seen = await run_bound(filled, ["handbook"], [("search_documents", {"query": "gift", "top_k": 51}),
                                                           ("search_documents", {"query": "gift"})])
    assert len(seen.retries) == 1 and "top_k must be between 1 and 50" in seen.retries[0]
    assert seen.returns[0].startswith("[1]")


async def test_bound_collections_without_documents_leave_the_capability_unattached(filled: Database) -> None:
    _result, seen = await run_bound(filled, ["empty"], [])
    assert seen.tools[0] == set() and seen.instructions[0] == "Be helpful."
    _result, seen = await run_bound(filled, [], [])
    assert seen.tools[0] == set()


async def test_a_database_that_does_not_answer_is_a_retry_not_an_empty_result(tmp_path: Path) -> None:
    broken = Database(f"sqlite+aiosqlite:///{tmp_path / 'missing' / 'gateway.db'}")
    scope = KnowledgeScope(collections=("handbook",), search=KnowledgeSearch((FullTextRanker(broken),)))
    model, seen = calling([("search_documents", {"query": "refund"}), ("search_documents", {"query": "refund"})])
    binding = binding_with([{"id": "knowledge"}])
    await run(assembled(binding, model, facts={"knowledge": scope}), "hi", binding=binding)
    await broken.close()
    assert "temporarily unavailable" in seen.retries[0] and "temporarily unavailable" in seen.returns[0]


async def test_the_tool_text_says_what_the_search_matches() -> None:
    model, infos = recording()
    binding = binding_with([{"id": "knowledge"}])
    scope = KnowledgeScope(collections=("handbook",), search=KnowledgeSearch(()))
    await run(assembled(binding, model, facts={"knowledge": scope}), "hi", binding=binding)
    tool = tool_defs(infos)["search_documents"]
    text = " ".join((tool.description or "").split())
    assert "full-text search: words are matched whole and as written, without stemming or synonyms" in text
    assert set(tool.parameters_json_schema["properties"]) == {"query", "top_k"}, "no argument names a collection"


async def filled_database(database_url: str) -> None:
    """The database a gateway will serve from, migrated and holding both collections."""
    db = Database(database_url)
    try:
        await upgrade(db)
        await fill(db)
    finally:
        await db.close()


CITED = "[1] Refund policy (handbook/refunds.md, part 1 of 1)\n"
SEARCH_THEN_CITE = ([("search_documents", {"query": "refund"})], "Within 30 days [1]. Source:")


async def test_a_slack_answer_cites_the_passages_the_search_returned(slack: FakeSlack, database_url: str) -> None:
    await filled_database(database_url)
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice", real_name="Alice")
    general = slack.add_channel("general", members=[alice, bot.app])
    model, seen = calling(*SEARCH_THEN_CITE)
    async with running_gateway(slack, [bot], database_url=database_url, redis_url=None, model=model,
                               capabilities=[{"id": "knowledge"}], agent={"collections": ["handbook"]},
                               top=HANDBOOK_AND_BOARD):
        said = await slack.user_says(general, alice, f"{bot.mention} how long do refunds take?")
        await slack.wait_for(lambda: any("[1]" in t for t in slack.texts(general, by=bot.app, thread_ts=said["ts"])))
    assert seen.returns[0].startswith("[1] Refund policy (handbook/refunds.md, part 1 of 1)\n")
    assert "**refund**" in seen.returns[0] and "board" not in seen.returns[0]
    [answer] = slack.texts(general, by=bot.app, thread_ts=said["ts"])
    assert answer.startswith("Within 30 days [1]. Source: [1] Refund policy (handbook/refunds.md")


async def test_a_telegram_answer_cites_the_passages_the_search_returned(telegram: FakeTelegram,
                                                                        database_url: str) -> None:
    await filled_database(database_url)
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    model, seen = calling(*SEARCH_THEN_CITE)
    async with telegram_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                                capabilities=[{"id": "knowledge"}], agent={"collections": ["handbook"]},
                                top=HANDBOOK_AND_BOARD):
        answer = await ask(telegram, bot, telegram.private_chat(alice), alice, "how long do refunds take?")
    assert seen.returns[0].startswith(CITED) and "board" not in seen.returns[0]
    assert answer.startswith("Within 30 days [1]. Source: [1] Refund policy")


async def test_a_mattermost_answer_cites_the_passages_the_search_returned(mattermost: FakeMattermost,
                                                                          database_url: str) -> None:
    await filled_database(database_url)
    bot = MattermostBot().register(mattermost)
    alice = mattermost.add_user("alice", first_name="Alice")
    channel = mattermost.add_channel(mattermost.add_team("acme"), "town-square", members=[bot.user, alice])
    model, seen = calling(*SEARCH_THEN_CITE)
    async with mattermost_gateway(mattermost, [bot], database_url=database_url, model=model,
                                  capabilities=[{"id": "knowledge"}], agent={"collections": ["handbook"]},
                                  top=HANDBOOK_AND_BOARD):
        await mattermost.user_posts(channel, alice, "@helper how long do refunds take?")
        await mattermost.wait_for(lambda: any("[1]" in p["message"] for p in mattermost.posts(channel, user=bot.user)))
    assert seen.returns[0].startswith(CITED) and "board" not in seen.returns[0]
    [answer] = [p["message"] for p in mattermost.posts(channel, user=bot.user)]
    assert answer.startswith("Within 30 days [1]. Source: [1] Refund policy")
