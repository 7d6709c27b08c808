"""Each compaction strategy trims what a long run sends the model, through a real run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from pydantic_ai import FunctionToolset, ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.capabilities import Capability
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage
from pydantic_ai_harness.compaction import estimate_token_count
from sqlalchemy import select

from capabilities import default_registry
from capabilities.registry import CapabilityDef, Registry, ToolInfo
from capabilities.run import BuildContext
from storage.db import Database
from storage.models import RunRow
from tests.support.capability_runs import assembled, binding_with, deps_for, run
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import answers, calls_then_answers

SMALL_WINDOW = {"context_window": 1000, "max_fraction": 0.2}
"""Compaction starts at about 200 tokens: after one bulky tool result, or a few long turns."""
SUMMARY = "The user asked for three reports; all three were fetched."


def report_registry() -> Registry:
    def build(_context: BuildContext[Any]) -> Capability[Any]:
        toolset = FunctionToolset(id="reports")

        @toolset.tool_plain
        def fetch_report(name: str) -> str:
            """Fetch a report.

            Args:
                name: The report's name.
            """
            return f"report {name}: " + "figures " * 300
        return Capability(toolsets=[toolset])

    reports = CapabilityDef(id="reports", name="Reports", category="utility", description="Reports.", build=build,
                            tools=(ToolInfo(id="fetch_report", summary="Fetch a report."),))
    return default_registry().with_extra(reports)


def long_history(turns: int) -> list[ModelMessage]:
    history: list[ModelMessage] = []
    for i in range(turns):
        history += [ModelRequest(parts=[UserPromptPart(f"question {i}: " + "context " * 60)]),
                    ModelResponse(parts=[TextPart(f"answer {i}")])]
    return history


def watching(final: FunctionModel) -> tuple[FunctionModel, list[list[ModelMessage]]]:
    """`final`'s behaviour, recording each main request's messages; summary requests get SUMMARY."""
    requests: list[list[ModelMessage]] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if "summarization assistant" in (info.instructions or ""):
            return ModelResponse(parts=[TextPart(SUMMARY)])
        requests.append(messages)
        return final.function(messages, info)  # type: ignore[misc]
    return FunctionModel(reply), requests


def text_of(messages: list[ModelMessage]) -> str:
    return "\n".join(str(getattr(part, "content", "")) for m in messages for part in m.parts)


async def run_with(config: dict[str, Any], model: FunctionModel, history: list[ModelMessage] | None = None) -> None:
    binding = binding_with([{"id": "reports"}, {"id": "compaction", "config": {**SMALL_WINDOW, **config}}])
    await run(assembled(binding, model, registry=report_registry()), "go", binding=binding, history=history)


async def test_clear_tool_results_empties_old_results() -> None:
    model, requests = watching(calls_then_answers(("fetch_report", {"name": "a"}), ("fetch_report", {"name": "b"})))
    await run_with({"strategy": "clear_tool_results", "keep_tool_pairs": 0}, model)
    returns = [p for m in requests[-1] for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [str(p.content) for p in returns] == ["[tool result cleared]", "[tool result cleared]"]


async def test_a_sliding_window_drops_the_oldest_turns() -> None:
    model, requests = watching(answers("ok"))
    await run_with({"strategy": "sliding_window", "keep_messages": 3}, model, history=long_history(8))
    assert len(requests[-1]) < 10
    assert "question 0" in text_of(requests[-1]) and "question 6" not in text_of(requests[-1])


@pytest.mark.parametrize("strategy", ["summarize", "tiered"])
async def test_a_summary_replaces_the_older_turns(strategy: str) -> None:
    model, requests = watching(answers("ok"))
    await run_with({"strategy": strategy, "keep_messages": 2}, model, history=long_history(8))
    seen = text_of(requests[-1])
    assert SUMMARY in seen and "question 3" not in seen


async def test_tiered_clears_tool_results_before_it_pays_for_a_summary() -> None:
    model, requests = watching(calls_then_answers(("fetch_report", {"name": "a"}), ("fetch_report", {"name": "b"})))
    await run_with({"strategy": "tiered", "keep_tool_pairs": 0}, model)
    seen = text_of(requests[-1])
    assert "[tool result cleared]" in seen and SUMMARY not in seen


def overhead_of(tokens: int, final: FunctionModel) -> FunctionModel:
    """`final`'s behaviour, reporting `tokens` more input than the messages it was sent (instructions and tool
    schemas, as a provider bills them)."""
    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        response = final.function(messages, info)  # type: ignore[misc]
        return replace(response, usage=RequestUsage(input_tokens=estimate_token_count(messages) + tokens,
                                                    output_tokens=5))
    return FunctionModel(reply)


async def run_noticed(config: dict[str, Any], model: FunctionModel,
                      history: list[ModelMessage] | None = None) -> list[str]:
    """Runs like `run_with`, returning what the run put into the chat's status line."""
    binding = binding_with([{"id": "reports"}, {"id": "compaction", "config": {**SMALL_WINDOW, **config}}])
    notices: list[str] = []
    agent = assembled(binding, model, registry=report_registry(), notice=notices.append)
    await agent.agent.run("go", deps=deps_for(binding), message_history=history)
    return notices


@pytest.mark.parametrize(("overhead", "compacted"), [(0, False), (1100, True)])
async def test_the_trigger_moves_down_by_the_overhead_measured_on_each_response(overhead: int,
                                                                                compacted: bool) -> None:
    # Trigger 2,000: about 1,000 tokens of history (past it with 1,100 of overhead, which the first request
    # cannot know yet), then a 600-token report.
    watched, requests = watching(calls_then_answers(("fetch_report", {"name": "a"})))
    notices = await run_noticed({"strategy": "sliding_window", "keep_messages": 3, "context_window": 4000,
                                 "max_fraction": 0.5}, overhead_of(overhead, watched), history=long_history(8))
    assert "question 6" in text_of(requests[0]), "the first request triggers on the messages alone"
    assert ("question 6" not in text_of(requests[1])) is compacted
    assert notices == []


async def test_it_gives_up_once_per_run_when_the_overhead_alone_is_past_the_trigger() -> None:
    watched, requests = watching(calls_then_answers(("fetch_report", {"name": "a"}), ("fetch_report", {"name": "b"})))
    notices = await run_noticed({"strategy": "sliding_window", "keep_messages": 1}, overhead_of(450, watched))
    assert len(requests) == 3 and all("report a" in text_of(r) for r in requests[2:])  # nothing dropped
    assert len(notices) == 1
    assert "450 tokens" in notices[0] and "1,000-token context window" in notices[0]
    assert "context_window above 2,250" in notices[0]


@pytest.mark.parametrize("strategy", ["summarize", "tiered"])
async def test_a_summary_says_what_it_summarizes_while_it_runs(strategy: str) -> None:
    notices: list[str] = []
    shown_during: list[list[str]] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if "summarization assistant" in (info.instructions or ""):
            shown_during.append(list(notices))
            return ModelResponse(parts=[TextPart(SUMMARY)])
        return ModelResponse(parts=[TextPart("ok")])

    binding = binding_with([{"id": "compaction", "config": {**SMALL_WINDOW, "strategy": strategy,
                                                            "keep_messages": 2}}])
    agent = assembled(binding, FunctionModel(reply), notice=notices.append)
    await agent.agent.run("go", deps=deps_for(binding),
                          message_history=long_history(8))
    assert len(shown_during) == 1 and shown_during[0][-1].startswith("Summarizing 15 earlier messages")
    assert notices[-1] == "", "the status line is cleared once the summary is written"


async def test_clearing_tool_results_says_nothing() -> None:
    model, _ = watching(calls_then_answers(("fetch_report", {"name": "a"}), ("fetch_report", {"name": "b"})))
    assert await run_noticed({"strategy": "tiered", "keep_tool_pairs": 0}, model) == []


async def test_the_chat_shows_the_summary_and_the_run_row_books_it(telegram: FakeTelegram,
                                                                   sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)

    def edits() -> list[str]:  # a private chat shows the status line as a draft: nothing is posted before the answer
        return [c.params.get("text", "") for c in telegram.calls
                if c.method in ("sendMessage", "editMessageText", "sendMessageDraft")]

    asked = {"own": 0, "summaries": 0}

    async def summarize(_messages: list[ModelMessage], _info: AgentInfo) -> ModelResponse:
        asked["summaries"] += 1
        await telegram.wait_for(lambda: any(t.startswith("Summarizing") for t in edits()), timeout=5)
        return ModelResponse(parts=[TextPart(SUMMARY)])

    main = calls_then_answers(("fetch_report", {"name": "a"}), ("fetch_report", {"name": "b"}),
                              answer=lambda _returned: "all fetched")
    summarizer = FunctionModel(summarize)

    async def complete(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if "summarization assistant" in (info.instructions or ""):
            return await summarizer.function(messages, info)  # type: ignore[misc]
        return main.function(messages, info)  # type: ignore[misc]

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        asked["own"] += 1
        async for piece in main.stream_function(messages, info):  # type: ignore[misc]
            yield piece

    model = FunctionModel(complete, stream_function=stream)
    config = {**SMALL_WINDOW, "strategy": "summarize", "keep_messages": 1}
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=model,
                               registry=report_registry(), capabilities=[{"id": "reports"},
                                                                         {"id": "compaction", "config": config}]):
        await telegram.user_says(bot.token, chat, alice, "fetch the reports")
        await telegram.wait_for(lambda: [m["text"] for m in telegram.bot_messages(chat["id"])][-1:] == [
            "all fetched"], timeout=10)
    assert any(t.startswith("Summarizing") and "earlier messages" in t for t in edits())
    db = Database(sqlite_url)
    try:
        async with db.session() as session:
            row = (await session.execute(select(RunRow))).scalar_one()
    finally:
        await db.close()
    assert asked["summaries"] >= 1
    assert row.requests == asked["own"] + asked["summaries"], "the summaries are booked to the run"
