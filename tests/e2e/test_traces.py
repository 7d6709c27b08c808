"""A turn's trace reaches an OTLP/HTTP collector: one turn span, the agent's spans inside it, no message text."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import pytest
import pytest_asyncio
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from gateway.config.schema import Settings
from gateway.server.tracing import build_tracing
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.loopback import serving
from tests.support.scripted import calls_then_answers

SECRET_WORDS = "swordfish"
"""In the message, the tool's arguments and the answer: in no exported span unless the operator opts in."""


@dataclass
class Collector:
    """Accepts `POST /v1/traces` as an OpenTelemetry collector would, keeping every request's raw body."""

    bodies: list[bytes] = field(default_factory=list)
    url: str = ""

    async def receive(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.read())
        return web.Response(body=ExportTraceServiceResponse().SerializeToString(),
                            content_type="application/x-protobuf")

    def spans(self) -> Iterator[Span]:
        for body in self.bodies:
            exported = ExportTraceServiceRequest.FromString(body)
            for resource in exported.resource_spans:
                for scope in resource.scope_spans:
                    yield from scope.spans


@pytest_asyncio.fixture
async def collector() -> AsyncIterator[Collector]:
    found = Collector()
    app = web.Application()
    app.router.add_post("/v1/traces", found.receive)
    async with serving(app) as found.url:
        yield found


def value(attribute: AnyValue) -> object:
    return getattr(attribute, attribute.WhichOneof("value"))


async def one_turn(telegram: FakeTelegram, database_url: str, environment: dict[str, str]) -> TelegramBot:
    """Alice asks once in a private chat; the model writes a plan with a tool, then answers. The words of each step
    hold `SECRET_WORDS`. Returns once the gateway stopped, which flushes the spans its tracer provider batches."""
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    plan = {"items": [{"content": f"Say {SECRET_WORDS}", "status": "in_progress"}]}
    model = calls_then_answers(("write_plan", plan), answer=lambda _: f"noted, {SECRET_WORDS}")
    async with running_gateway(telegram, [bot], database_url=database_url, redis_url=None, model=model,
                               capabilities=[{"id": "planning"}], environment=environment):
        await telegram.user_says(bot.token, chat, alice, f"remember {SECRET_WORDS}")
        await telegram.wait_for(lambda: any(m["text"] == f"noted, {SECRET_WORDS}"
                                            for m in telegram.bot_messages(chat["id"])))
    return bot


async def test_one_turn_is_one_trace_with_the_agent_spans_inside_and_no_text(
        telegram: FakeTelegram, collector: Collector, database_url: str) -> None:
    bot = await one_turn(telegram, database_url, {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url})
    spans = list(collector.spans())
    [turn] = [span for span in spans if span.name == "turn"]
    attributes = {a.key: value(a.value) for a in turn.attributes}
    key = f"telegram:{bot.name}:1001:-"
    assert attributes["gateway.conversation"] == hashlib.sha256(key.encode()).hexdigest()[:16], "as the logs say"
    assert key not in repr(spans) and "1001" not in repr(attributes), "no chat or user id in a span"
    assert isinstance(attributes["gateway.inbox_id"], int) and attributes["gateway.bot"] == bot.name
    assert not turn.parent_span_id
    assert turn.start_time_unix_nano <= min(span.start_time_unix_nano for span in spans)
    assert turn.end_time_unix_nano >= max(span.end_time_unix_nano for span in spans)
    in_turn = [span for span in spans if span.trace_id == turn.trace_id and span is not turn]
    children = [span for span in in_turn if span.parent_span_id == turn.span_id]
    assert [span.name for span in children] == ["invoke_agent assistant"]
    names = {span.name for span in in_turn}
    assert any(name.startswith("chat ") for name in names), names
    assert any(name.startswith("execute_tool write_plan") for name in names), names
    assert all(span.trace_id == turn.trace_id for span in spans)
    assert not any(SECRET_WORDS.encode() in body for body in collector.bodies)


async def test_the_operator_can_opt_in_to_exporting_what_was_said(
        telegram: FakeTelegram, collector: Collector, sqlite_url: str) -> None:
    await one_turn(telegram, sqlite_url, {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
                                          "GATEWAY_TRACE_CONTENT": "true"})
    assert any(SECRET_WORDS.encode() in body for body in collector.bodies)


def test_without_an_endpoint_nothing_is_traced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    tracing = build_tracing(Settings(database_url="sqlite:///unused.db", redis_url=None))
    assert (tracing.provider, tracing.instrumentation) == (None, None)
    with tracing.tracer.start_as_current_span("turn") as span:
        assert not span.is_recording()
