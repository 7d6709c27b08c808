"""What runs cost and the budgets a binding sets: each run's cost as genai-prices prices it, none for a model it
does not know, a resumed run's added to what it spent before it parked, spend in `/metrics`, and a turn refused at a
limit, counted from the database every replica writes."""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import replace
from decimal import Decimal

import pytest
from genai_prices import Usage, calc_price
from prometheus_client.parser import text_string_to_metric_families

from gateway.agents.bindings import BindingStore
from gateway.server.app import Gateway
from storage.db import Database
from storage.models import RunRow
from tests.conftest import REDIS
from tests.e2e.test_metrics import scrape
from tests.e2e.test_telegram_approvals import DEPLOY, DEPLOY_WEB, buttons, cards, texts
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import FAST, TelegramBot, ask, gateway_config, running_gateway
from tests.support.records import run_rows, until_resumed
from tests.support.scripted import calls_then_answers, echoes, priced_as

PRICED = {"model": "openai:gpt-4o"}
"""The agent's model string; the test's scripted model answers under it with responses named `gpt-4o`."""


def gpt_4o_price(row: RunRow) -> Decimal:
    return calc_price(Usage(input_tokens=row.input_tokens, output_tokens=row.output_tokens), "gpt-4o",
                      provider_id="openai").total_price


async def test_a_run_records_what_genai_prices_says_it_cost(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=echoes(),
                               agent=PRICED, models={"openai:gpt-4o": priced_as(echoes(), "gpt-4o")}):
        assert await ask(telegram, bot, chat, alice, "what does this cost") == "echo: what does this cost"
    [run] = await run_rows(database_url)
    assert run.status == "answered" and run.input_tokens > 0 and run.output_tokens > 0
    assert run.cost_usd is not None and run.cost_usd > 0
    assert run.cost_usd == gpt_4o_price(run).quantize(Decimal("1e-10"))


async def test_a_model_without_a_known_price_records_no_cost_rather_than_nothing_spent(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        assert await ask(telegram, bot, chat, alice, "hello") == "echo: hello"
    [run] = await run_rows(sqlite_url)
    assert (run.status, run.input_tokens > 0, run.cost_usd) == ("answered", True, None)


async def test_a_resumed_run_adds_its_cost_to_what_it_spent_before_it_parked(
        telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    executed: list[str] = []
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                               agent=PRICED, models={"openai:gpt-4o": priced_as(calls_then_answers(*DEPLOY_WEB),
                                                                                "gpt-4o")},
                               registry=deploy_registry(executed), capabilities=DEPLOY):
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await telegram.wait_for(lambda: len(cards(telegram, chat["id"])) == 1)
        [parked] = await run_rows(sqlite_url)
        card = cards(telegram, chat["id"])[0]
        await telegram.user_clicks(bot.token, card, alice, buttons(card)["✅ Approve"])
        await telegram.wait_for(lambda: texts(telegram, chat["id"])[-1] == "done: deployed web")
        await until_resumed(sqlite_url, 1)
    [resumed] = await run_rows(sqlite_url)
    assert (parked.status, parked.requests, resumed.status, resumed.requests) == ("parked", 1, "answered", 2)
    assert parked.cost_usd is not None and resumed.cost_usd is not None
    assert resumed.cost_usd > parked.cost_usd
    assert resumed.cost_usd == gpt_4o_price(resumed).quantize(Decimal("1e-10"))


async def test_metrics_count_spend_and_tokens_by_bot_and_agent(telegram: FakeTelegram, sqlite_url: str) -> None:
    priced, idle = TelegramBot().register(telegram), TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [priced, idle], database_url=sqlite_url, redis_url=None,
                               model=echoes(), agent=PRICED,
                               models={"openai:gpt-4o": priced_as(echoes(), "gpt-4o")}) as gateway:
        await ask(telegram, priced, chat, alice, "one")
        await ask(telegram, priced, chat, alice, "two")
        await telegram.wait_for(lambda: gateway.metrics.registry.get_sample_value(
            "gateway_turns_total", {"bot": priced.name, "platform": "telegram", "outcome": "answered"}) == 2)
        text = await scrape(gateway.url)
    found = {(s.name, frozenset(s.labels.items())): s.value
             for family in text_string_to_metric_families(text) for s in family.samples}
    ours = frozenset({("bot", priced.name), ("agent", "assistant")})
    spent = sum((run.cost_usd or Decimal(0) for run in await run_rows(sqlite_url)), Decimal(0))
    assert found[("gateway_spend_usd_total", ours)] == pytest.approx(float(spent)) and spent > 0
    assert found[("gateway_agent_tokens_total", ours | {("kind", "output")})] == sum(
        run.output_tokens for run in await run_rows(sqlite_url))
    assert found[("gateway_runs_unpriced_total", ours)] == 0
    assert found[("gateway_spend_usd_total", frozenset({("bot", idle.name), ("agent", "assistant")}))] == 0, (
        "every bot's series is there from the start")


async def test_metrics_count_a_run_without_a_price_as_unpriced(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes()) as gateway:
        await ask(telegram, bot, chat, alice, "one")
        labels = {"bot": bot.name, "agent": "assistant"}
        await telegram.wait_for(  # counted once the run's end is accounted, just after its answer shows
            lambda: gateway.metrics.registry.get_sample_value("gateway_runs_unpriced_total", labels) == 1)
        assert gateway.metrics.registry.get_sample_value("gateway_spend_usd_total", labels) == 0


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_budget_reached_on_one_replica_refuses_the_next_turn_on_another(
        telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot(binding={"limits": {"per_person": {"tokens_per_day": 1}}}).register(telegram)
    alice, bob = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Bob")
    quick_handover = replace(FAST, transport_lease_ttl=1.0)
    async with AsyncExitStack() as stack:
        first: Gateway = await stack.enter_async_context(running_gateway(
            telegram, [bot], database_url=database_url, redis_url=REDIS, model=echoes(), tuning=quick_handover))
        assert await ask(telegram, bot, telegram.private_chat(alice), alice, "one") == "echo: one"
        second: Gateway = await stack.enter_async_context(running_gateway(
            telegram, [bot], database_url=database_url, redis_url=REDIS, model=echoes(), tuning=quick_handover))
        await first.abort()  # whatever the first replica counted in its memory is gone; the runs table is not
        refused = await ask(telegram, bot, telegram.private_chat(alice), alice, "two")
        assert await ask(telegram, bot, telegram.private_chat(bob), bob, "three") == "echo: three", (
            "a person's limit is theirs alone")
        labels = {"bot": bot.name, "platform": "telegram", "reason": "budget"}
        assert second.metrics.registry.get_sample_value("gateway_messages_refused_total", labels) == 1
    assert refused.startswith("You have used ") and "of the 1 tokens a day this bot allows you" in refused, refused
    assert "(per_person.tokens_per_day)" in refused and "It resets at 00:00 UTC (in " in refused, refused
    assert [run.status for run in await run_rows(database_url)] == ["answered", "answered"], "no model ran for 'two'"


async def test_a_binding_budget_counts_everyone_in_the_bots_chats(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot(binding={"limits": {"per_binding": {"cost_per_month_usd": 0.0001}}}).register(telegram)
    alice, bob = telegram.add_user(1001, "Alice"), telegram.add_user(1002, "Bob")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes(),
                               agent=PRICED, models={"openai:gpt-4o": priced_as(echoes(), "gpt-4o")}):
        assert await ask(telegram, bot, telegram.private_chat(alice), alice, "one") == "echo: one"
        refused = await ask(telegram, bot, telegram.private_chat(bob), bob, "two")
    assert refused.startswith("Everyone here together has used $0.") and "of the $0.0001 a month this bot allows (" \
        in refused, refused
    assert "(per_binding.cost_per_month_usd)" in refused and "It resets on 1 " in refused, refused


async def test_limits_applied_while_the_gateway_runs_hold_from_the_next_message(telegram: FakeTelegram,
                                                                               sqlite_url: str) -> None:
    """`gateway apply` writes the bindings every replica reads at each claim: no restart for a budget to hold."""
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes()):
        assert await ask(telegram, bot, chat, alice, "one") == "echo: one"
        limited = replace(bot, binding={"limits": {"per_person": {"tokens_per_day": 1}}})
        db = Database(sqlite_url)
        try:
            await BindingStore(db).apply(gateway_config(telegram, [limited]))  # what `gateway apply` does
        finally:
            await db.close()
        refused = await ask(telegram, bot, chat, alice, "two")
    assert refused.startswith("You have used ") and "of the 1 tokens a day this bot allows you" in refused, refused
