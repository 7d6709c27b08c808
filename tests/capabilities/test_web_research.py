"""`web_search` against loopback fakes of Tavily, Brave and Exa (and DuckDuckGo behind its client seam): results
as linked text, no hits as text, an outage or a rejected key as a retry prompt that never carries the key."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from pydantic_ai import ModelMessage, ModelRequest, RetryPromptPart, ToolReturnPart
from pydantic_ai.capabilities import WebSearch

from capabilities import default_registry
from capabilities.registry import config_for
from capabilities.run import BuildContext
from capabilities.web_research import METHOD_LABELS, WebResearchConfig
from capabilities.web_research.build import build
from capabilities.web_research.providers import endpoint
from tests.support.capability_runs import assembled, binding_with, run, run_facts
from tests.support.fakes.duckduckgo import FakeDuckDuckGo
from tests.support.fakes.search import FakeSearch
from tests.support.harness import free_port
from tests.support.scripted import calls_then_answers

KEY = "fake-search-key-0123456789"
PAID = ["tavily", "brave", "exa"]
ENV = {"tavily": "GATEWAY_TAVILY_URL", "brave": "GATEWAY_BRAVE_URL", "exa": "GATEWAY_EXA_URL"}


@pytest_asyncio.fixture
async def search(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeSearch]:
    async with FakeSearch(key=KEY) as fake:
        for variable in ENV.values():
            monkeypatch.setenv(variable, fake.url)
        yield fake


def parts(messages: list[ModelMessage]) -> list[Any]:
    """The tool's answers as the model saw them: retry prompts and returns, in order."""
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, RetryPromptPart | ToolReturnPart)]


def retried(part: Any) -> bool:
    """A retry prompt, as pydantic-ai 2.62 hands it back (a return marked `retried`, or a `RetryPromptPart`)."""
    return isinstance(part, RetryPromptPart) or getattr(part, "outcome", None) == "retried"


def answered(part: Any) -> bool:
    return isinstance(part, ToolReturnPart) and not retried(part)


async def searched(method: str, query: str, *, secret: str = KEY, calls: int = 1, **config: Any) -> list[Any]:
    entry = {"id": "web_research", "config": {"method": method, **config}, "secret_id": "SEARCH_KEY"}
    binding = binding_with([entry])
    model = calls_then_answers(*[("web_search", {"query": query})] * calls)
    agent = assembled(binding, model, secrets={"SEARCH_KEY": secret})
    return parts((await run(agent, "look it up", binding=binding)).all_messages())


def test_the_method_field_carries_a_label_for_every_value() -> None:
    schema = WebResearchConfig.model_json_schema()["properties"]["method"]
    assert set(schema["x-enum-labels"]) == set(schema["enum"]) == set(METHOD_LABELS)
    assert schema["x-enum-labels"]["duckduckgo"] == "DuckDuckGo"


def test_the_registry_serves_the_key_as_needed_only_for_some_configs() -> None:
    [served] = [c for c in default_registry().describe() if c["id"] == "web_research"]
    assert served["key"]["conditional"] is True and served["scopes"] == ["web:read"]
    assert "x-enum-labels" in served["config_schema"]["properties"]["method"]


@pytest.mark.parametrize("method", PAID)
async def test_each_paid_service_is_asked_in_its_own_shape_and_answers_as_linked_text(
        method: str, search: FakeSearch) -> None:
    [answer] = await searched(method, "pydantic ai", max_results=2)
    assert answered(answer)
    lines = str(answer.content).splitlines()
    assert lines[0].startswith("Results for 'pydantic ai' from ")
    assert lines[1] == "1. [Pydantic AI](https://ai.pydantic.dev/)"
    assert lines[2].strip() == "Agent framework for Python."
    assert "3." not in str(answer.content)
    [seen] = search.seen
    assert (seen.service, seen.query, seen.count) == (method, "pydantic ai", 2)


async def test_the_key_travels_in_each_services_own_header(search: FakeSearch) -> None:
    for method in PAID:
        await searched(method, "q")
    headers = {seen.service: seen.headers for seen in search.seen}
    assert headers["tavily"]["Authorization"] == f"Bearer {KEY}"
    assert headers["brave"]["X-Subscription-Token"] == KEY
    assert headers["exa"]["x-api-key"] == KEY


@pytest.mark.parametrize("method", PAID)
async def test_no_hits_is_an_answer_in_text(method: str, search: FakeSearch) -> None:
    [answer] = await searched(method, "nothing")
    assert answered(answer) and answer.content == "No results for 'nothing'."


@pytest.mark.parametrize("method", PAID)
async def test_a_service_that_is_down_is_a_retry_prompt_then_says_so(method: str, search: FakeSearch) -> None:
    search.down = True
    first, last = await searched(method, "pydantic ai", calls=2)
    assert retried(first) and "HTTP 503" in str(first.content)
    assert answered(last) and "could not search the web" in str(last.content)


@pytest.mark.parametrize("method", PAID)
async def test_a_rejected_key_is_a_retry_prompt_and_the_key_is_in_no_text_or_log_line(
        method: str, search: FakeSearch, caplog: pytest.LogCaptureFixture) -> None:
    wrong = "wrong-key-must-never-show-4242"
    caplog.set_level(logging.DEBUG)
    first, last = await searched(method, "pydantic ai", secret=wrong, calls=2)
    assert retried(first) and "refused this deployment's API key (HTTP 4" in str(first.content)
    texts = [str(first.content), str(last.content), *(r.getMessage() for r in caplog.records),
             *(str(r.exc_text) for r in caplog.records)]
    assert not [text for text in texts if wrong in text]
    assert search.seen[0].headers  # it was sent, to the service only


async def test_a_service_that_does_not_answer_at_all_is_a_retry_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeSearch() as gone:
        url = gone.url
    monkeypatch.setenv("GATEWAY_BRAVE_URL", url)
    [first] = await searched("brave", "q")
    assert retried(first) and "Brave Search did not answer (ConnectError)" in str(first.content)


async def test_a_redirect_is_not_followed_so_the_key_goes_nowhere_else(search: FakeSearch) -> None:
    async with FakeSearch(key=KEY) as elsewhere:
        search.redirect_to = f"{elsewhere.url}/search"
        [first] = await searched("tavily", "q")
    assert retried(first) and "Tavily answered HTTP 307" in str(first.content)
    assert elsewhere.seen == []


def test_the_services_public_addresses_are_the_default() -> None:
    assert endpoint("tavily", {}) == "https://api.tavily.com"
    assert endpoint("brave", {}) == "https://api.search.brave.com"
    assert endpoint("exa", {"GATEWAY_EXA_URL": "http://127.0.0.1:9/"}) == "http://127.0.0.1:9"


@pytest_asyncio.fixture
async def duckduckgo(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeDuckDuckGo]:
    async with FakeDuckDuckGo() as fake:
        monkeypatch.setenv("DDGS_PROXY", fake.proxy_url)
        monkeypatch.setenv("GATEWAY_DDGS_CA_FILE", fake.ca_file)
        yield fake


async def test_duckduckgo_is_asked_over_https_for_its_own_results_only(duckduckgo: FakeDuckDuckGo) -> None:
    [answer] = await searched("duckduckgo", "pydantic ai", max_results=1)
    assert answered(answer)
    assert str(answer.content).splitlines()[:2] == ["Results for 'pydantic ai' from DuckDuckGo:",
                                                    "1. [Pydantic AI](https://ai.pydantic.dev/)"]
    assert "Release notes" not in str(answer.content)
    assert duckduckgo.tunnels == ["html.duckduckgo.com:443"]
    assert duckduckgo.queries[0]["q"] == ["pydantic ai"]


async def test_duckduckgo_with_nothing_found_says_so_and_that_it_may_be_limiting(duckduckgo: FakeDuckDuckGo) -> None:
    [answer] = await searched("duckduckgo", "nothing")
    assert answered(answer) and str(answer.content).startswith("No results for 'nothing'. DuckDuckGo answers an empty")


async def test_duckduckgo_out_of_reach_is_a_retry_prompt(duckduckgo: FakeDuckDuckGo,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDGS_PROXY", f"http://127.0.0.1:{free_port()}")
    first, last = await searched("duckduckgo", "pydantic ai", calls=2)
    assert retried(first) and "DuckDuckGo did not answer (DDGSException)" in str(first.content)
    assert answered(last) and "could not search the web" in str(last.content)


def test_native_is_the_providers_own_search_and_offers_no_function() -> None:
    definition = default_registry().get("web_research")
    assert definition is not None
    config = config_for(definition, {"method": "native"})
    built = build(BuildContext(capability="web_research", config=config, run=run_facts(binding_with())))
    assert isinstance(built, WebSearch)
    assert definition.offered_tools(config) == frozenset() and definition.provider_tools(config) == {"web_search"}
    assert definition.provider_tools(config_for(definition, {"method": "tavily"})) == frozenset()
