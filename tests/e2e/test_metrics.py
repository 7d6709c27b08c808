"""`/metrics` after a conversation: the series an operator graphs, each gateway with its own registry."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.pipeline.metrics import Backlog, GatewayMetrics
from tests.support import mattermost_harness, slack_harness
from tests.support.fakes.mattermost import FakeMattermost
from tests.support.fakes.slack import FakeSlack
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, ask, running_gateway
from tests.support.mattermost_harness import MattermostBot
from tests.support.scripted import echoes
from tests.support.slack_harness import SlackBot


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def scrape(url: str) -> str:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{url}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


async def test_metrics_show_a_conversation_by_bot_and_model(telegram: FakeTelegram, database_url: str) -> None:
    bot = TelegramBot().register(telegram)
    other = TelegramBot(binding={"access": "allowlist", "allow": ["@nobody"]}).register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot, other], database_url=database_url, redis_url=None,
                               model=echoes()) as gateway:
        assert await ask(telegram, bot, chat, alice, "hello") == "echo: hello"
        assert await ask(telegram, bot, chat, alice, "again") == "echo: again"
        assert "only answers people on its allowlist" in await ask(telegram, other, chat, alice, "hi")
        text = await scrape(gateway.url)
    found = samples(text)
    ours = frozenset({("bot", bot.name), ("platform", "telegram")})
    theirs = frozenset({("bot", other.name), ("platform", "telegram")})
    assert found[("gateway_messages_received_total", ours)] == 2
    assert found[("gateway_messages_acked_total", ours | {("outcome", "accepted")})] == 2
    assert found[("gateway_messages_answered_total", ours)] == 2
    assert found[("gateway_messages_refused_total", theirs | {("reason", "allowlist")})] == 1
    assert found[("gateway_turns_total", ours | {("outcome", "answered")})] == 2
    assert found[("gateway_turn_first_post_seconds_count", ours)] == 2
    assert found[("gateway_turn_final_text_seconds_count", ours)] == 2
    assert found[("gateway_turn_final_text_seconds_sum", ours)] > 0
    model = frozenset({("model", "function:scripted")})
    assert found[("gateway_model_requests_total", model)] == 2
    assert found[("gateway_model_tokens_total", model | {("kind", "input")})] > 0
    assert found[("gateway_transport_connected", ours)] == 1
    assert found[("gateway_transport_lease_changes_total", ours | {("change", "acquired")})] == 1
    assert found[("gateway_inbox_depth", frozenset())] == 0
    assert found[("gateway_inbox_oldest_age_seconds", frozenset())] == 0
    assert found[("gateway_approvals", frozenset({("status", "pending")}))] == 0
    label_values = {value for _, labels in found for _, value in labels}
    assert str(chat["id"]) not in label_values and str(alice["id"]) not in label_values, "no chat or user ids as labels"


async def test_every_series_of_a_bot_shows_at_zero_before_its_first_message(telegram: FakeTelegram,
                                                                              sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes()) as gateway:
        found = samples(await scrape(gateway.url))
    ours = frozenset({("bot", bot.name), ("platform", "telegram")})
    for name in ("gateway_messages_received_total", "gateway_messages_answered_total",
                 "gateway_turn_first_post_seconds_count", "gateway_turn_final_text_seconds_count"):
        assert found[(name, ours)] == 0, name
    for name, label, values in (
            ("gateway_messages_acked_total", "outcome", ("accepted", "duplicate", "ignored", "rejected")),
            ("gateway_messages_refused_total", "reason", ("allowlist", "rate_limit")),
            ("gateway_turns_total", "outcome", ("answered", "parked", "failed")),
            ("gateway_transport_lease_changes_total", "change", ("lost",))):
        for value in values:
            assert found[(name, ours | {(label, value)})] == 0, (name, value)
    assert found[("gateway_bot_signed_in", ours)] == 1


async def test_each_gateway_counts_only_its_own(telegram: FakeTelegram, sqlite_url: str, tmp_path) -> None:
    first, second = TelegramBot().register(telegram), TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [first], database_url=sqlite_url, redis_url=None, model=echoes()) as one, \
            running_gateway(telegram, [second], database_url=f"sqlite:///{tmp_path / 'second.db'}", redis_url=None,
                            model=echoes()) as two:
        await ask(telegram, first, chat, alice, "hello")
        text_one, text_two = await scrape(one.url), await scrape(two.url)
    assert first.name in text_one and first.name not in text_two
    assert samples(text_two)[
        ("gateway_messages_answered_total", frozenset({("bot", second.name), ("platform", "telegram")}))] == 0


def trouble(platform: str, method: str, kind: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return ("gateway_platform_api_trouble_total",
            frozenset({("platform", platform), ("method", method), ("kind", kind)}))


async def test_a_telegram_429_is_counted_by_method(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=echoes()) as gateway:
        telegram.fail_next("sendMessage", retry_after=1)  # PTB reads 0 as no RetryAfter
        assert await ask(telegram, bot, chat, alice, "hello") == "echo: hello"
        found = samples(await scrape(gateway.url))
    assert found[trouble("telegram", "sendMessage", "rate_limited")] == 1
    assert trouble("telegram", "sendMessage", "error") not in found


async def test_a_slack_429_is_counted_by_method(slack: FakeSlack, sqlite_url: str) -> None:
    bot = SlackBot(app=slack.add_app("helper"))
    alice = slack.add_user("alice")
    dm = slack.open_dm(alice, bot.app)
    slack.fail_next("chat.postMessage", retry_after=0)
    async with slack_harness.running_gateway(slack, [bot], database_url=sqlite_url, redis_url=None,
                                             model=echoes()) as gateway:
        await slack.user_says(dm, alice, "hi")
        await slack.wait_for(lambda: slack.texts(dm, by=bot.app) == ["echo: hi"])
        found = samples(await scrape(gateway.url))
    assert found[trouble("slack", "chat.postMessage", "rate_limited")] == 1
    assert trouble("slack", "chat.postMessage", "error") not in found


@pytest.mark.parametrize(("status", "kind", "other"), [(429, "rate_limited", "error"), (500, "error", "rate_limited")])
async def test_a_failed_mattermost_call_is_counted_by_method_and_kind(mattermost: FakeMattermost, sqlite_url: str,
                                                                      status: int, kind: str, other: str) -> None:
    bot = MattermostBot()
    bot.register(mattermost)
    alice = mattermost.add_user("alice")
    dm = mattermost.direct_channel(alice, bot.user)
    mattermost.fail_next("create_post", status, headers={"Retry-After": "0"} if status == 429 else None)
    async with mattermost_harness.running_gateway(mattermost, [bot], database_url=sqlite_url,
                                                  model=echoes()) as gateway:
        await mattermost.user_posts(dm, alice, "hi")
        await mattermost.wait_for(lambda: [p["message"] for p in mattermost.posts(dm, user=bot.user)] == ["echo: hi"])
        found = samples(await scrape(gateway.url))
    assert found[trouble("mattermost", "POST /posts", kind)] == 1
    assert trouble("mattermost", "POST /posts", other) not in found


README = Path(__file__).parents[2] / "README.md"


def readme_metrics() -> dict[str, tuple[str, frozenset[str]]]:
    """The operations section's table: type and labels by series name."""
    section = README.read_text().split("### Metrics", 1)[1].split("### ", 1)[0]
    rows = re.findall(r"^\| `(gateway_\w+)` \| (\w+) \|([^|]*)\|", section, flags=re.MULTILINE)
    return {name: (kind, frozenset(re.findall(r"`(\w+)`", labels))) for name, kind, labels in rows}


def test_the_readme_names_every_series_with_its_type_and_labels() -> None:
    metrics = GatewayMetrics({"tg": "telegram"}, agents={"tg": "assistant"})
    metrics.api_trouble("telegram", "sendMessage", "error")  # the series keyed by what only use shows
    metrics.model_used("test", requests=1, input_tokens=1, output_tokens=1)
    exposed = {}
    for family in text_string_to_metric_families(metrics.render(Backlog(inbox_depth=0, oldest_age=0), {}).decode()):
        if family.name.endswith("_created"):
            continue  # prometheus-client's start time of each counter, not a series of ours
        name = family.name + ("_total" if family.type == "counter" else "")
        exposed[name] = (family.type, frozenset(label for sample in family.samples for label in sample.labels
                                                if label != "le"))
    assert readme_metrics() == exposed
