"""`web_fetch` through the URL guard, against a loopback site: local and metadata addresses refused as
a retry prompt that names no address, pages as Markdown cut at the configured length, PDFs as the file, and host
filters that can match, kept in one DNS spelling."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from pydantic_ai import BinaryContent, ModelRequest, ToolReturnPart
from pydantic_ai.capabilities import WebFetch

from capabilities import default_registry
from capabilities.registry import Registry, config_for
from capabilities.web_fetch import spellings
from tests.support.capability_runs import assembled, binding_with, context_for, run, run_facts
from tests.support.fakes.pages import PDF, FakePages
from tests.support.scripted import calls_then_answers

DEV = default_registry(fetch_local=True)
"""What `GATEWAY_DEV_WEB_FETCH_ALLOW_LOCAL` builds: the loopback site is reachable, cloud metadata never."""


@pytest_asyncio.fixture
async def pages() -> AsyncIterator[FakePages]:
    async with FakePages() as site:
        yield site


async def fetched(url: str, *, registry: Registry = DEV, calls: int = 1, **config: Any) -> list[ToolReturnPart]:
    binding = binding_with([{"id": "web_fetch", "config": config}])
    agent = assembled(binding, calls_then_answers(*[("web_fetch", {"url": url})] * calls), registry=registry)
    messages = (await run(agent, "read it", binding=binding)).all_messages()
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def retried(part: ToolReturnPart) -> bool:
    return part.outcome == "retried"


async def test_a_loopback_address_is_refused_by_default_as_a_retry_naming_no_address(pages: FakePages) -> None:
    first, last = await fetched(f"{pages.url}/page", registry=default_registry(), calls=2)
    assert retried(first) and not retried(last)
    assert "private, loopback, link-local, reserved or cloud-metadata address" in str(first.content)
    assert "127.0.0.1" not in str(first.content) and "allow-local" not in str(first.content)
    assert pages.requested == []


async def test_a_page_arrives_as_markdown_with_its_title(pages: FakePages) -> None:
    [answer] = await fetched(f"{pages.url}/page")
    assert not retried(answer)
    assert answer.content["title"] == "Release notes"
    assert "Version 2\n=========" in answer.content["content"] and "[agents](/more)" in answer.content["content"]


async def test_scripts_styles_and_other_text_that_is_not_content_never_reach_the_model(pages: FakePages) -> None:
    [answer] = await fetched(f"{pages.url}/page")
    content = answer.content["content"]
    assert "End." in content
    hidden = ["steal", "exfiltrate", "hidden-style", "enable-scripts", "hidden-template", "unclosed"]
    assert [word for word in hidden if word in content] == []


async def test_a_long_page_is_cut_at_max_content_chars(pages: FakePages) -> None:
    [answer] = await fetched(f"{pages.url}/long", max_content_chars=1000)
    content = answer.content["content"]
    assert content.endswith("[Content truncated]") and len(content) == 1000 + len("\n\n[Content truncated]")


async def test_a_pdf_arrives_as_the_file(pages: FakePages) -> None:
    [answer] = await fetched(f"{pages.url}/paper.pdf")
    assert isinstance(answer.content, BinaryContent)
    assert answer.content.media_type == "application/pdf" and answer.content.data == PDF


async def test_a_body_past_the_download_bound_is_refused_as_a_retry(pages: FakePages) -> None:
    [answer] = await fetched(f"{pages.url}/huge.pdf")
    assert retried(answer) and "exceeds" in str(answer.content)


@pytest.mark.parametrize("path", ["/to-metadata", "/to-mapped-metadata"])
async def test_a_redirect_into_cloud_metadata_is_refused_even_where_local_addresses_are_allowed(
        path: str, pages: FakePages) -> None:
    [answer] = await fetched(f"{pages.url}{path}")
    assert retried(answer) and "cloud-metadata" in str(answer.content)
    assert "169.254" not in str(answer.content)
    assert pages.requested == [path]


async def test_a_blocked_host_is_refused_in_every_spelling_of_it(pages: FakePages) -> None:
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in "localhost")  # fullwidth letters, which IDNA folds to localhost
    fullwidth = f"http://{fullwidth}:{pages.port}/page"
    [answer] = await fetched(fullwidth, blocked_domains=["LOCALHOST."])
    assert retried(answer) and "is blocked" in str(answer.content)
    assert pages.requested == []


async def test_an_allowlist_admits_only_its_hosts(pages: FakePages) -> None:
    [refused] = await fetched(f"http://127.0.0.1:{pages.port}/page", allowed_domains=["localhost"])
    assert retried(refused) and "not in the allowed domains" in str(refused.content)
    [read] = await fetched(f"{pages.url}/page", allowed_domains=["localhost"])
    assert not retried(read) and read.content["title"] == "Release notes"


def validated(**config: Any) -> Any:
    definition = default_registry().get("web_fetch")
    assert definition is not None
    return config_for(definition, config)


def test_hosts_are_kept_in_the_one_spelling_dns_is_asked_for_and_handed_over_in_every_spelling() -> None:
    config = validated(allowed_domains=["EXÄMPLE.com.", "xn--exmple-cua.com", "Docs.Python.org"])
    assert config.allowed_domains == ["xn--exmple-cua.com", "docs.python.org"]
    assert spellings(config.allowed_domains) == ["xn--exmple-cua.com", "exämple.com", "docs.python.org"]


def test_an_empty_denylist_is_read_as_unset() -> None:
    assert validated(blocked_domains=[]).blocked_domains is None


def test_native_and_auto_are_pydantic_ais_web_fetch_and_run_at_the_provider() -> None:
    definition = default_registry().get("web_fetch")
    assert definition is not None
    for method in ("native", "auto"):
        config = validated(method=method)
        built = definition.build(context_for("web_fetch", config, run_facts(binding_with())))
        assert isinstance(built, WebFetch) and definition.provider_tools(config) == {"web_fetch"}
    assert definition.provider_tools(validated()) == frozenset()
