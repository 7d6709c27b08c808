"""A turn's trace reaches an OTLP/HTTP collector: one turn span, the agent's spans inside it, no message text."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import pytest_asyncio
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.fakes.telegram import FakeTelegram
from tests.harness import TelegramBot, running_gateway
from tests.scripted import calls_then_answers

SECRET_WORDS = "swordfish"
"""In the message, the tool's arguments and the answer: in no exported span unless the operator opts in."""


@dataclass
class Collector:
    """Accepts `POST /v1/traces` as an OpenTelemetry collector would, keeping every request's raw body."""

    bodies: list[bytes] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    url: str = ""

    async def receive(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.read())
        self.arrived.set()
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
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    found.url = f"http://{host}:{port}"
    try:
        yield found
    finally:
        await runner.cleanup()


@pytest_asyncio.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


def value(attribute: AnyValue) -> object:
    return getattr(attribute, attribute.WhichOneof("value"))


async def test_one_turn_is_one_trace_with_the_agent_spans_inside_and_no_text(
        telegram: FakeTelegram, collector: Collector, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    alice = telegram.add_user(1001, "Alice")
    chat = telegram.private_chat(alice)
    plan = {"items": [{"content": f"Say {SECRET_WORDS}", "status": "in_progress"}]}
    model = calls_then_answers(("write_plan", plan), answer=lambda _: f"noted, {SECRET_WORDS}")
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None, model=model,
                               capabilities=[{"id": "planning"}],
                               environment={"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url}):
        await telegram.user_says(bot.token, chat, alice, f"remember {SECRET_WORDS}")
        await telegram.wait_for(lambda: any(m["text"] == f"noted, {SECRET_WORDS}"
                                            for m in telegram.bot_messages(chat["id"])))
    # Stopping the gateway flushes what its tracer provider still batches.
    spans = list(collector.spans())
    [turn] = [span for span in spans if span.name == "turn"]
    attributes = {a.key: value(a.value) for a in turn.attributes}
    assert attributes["gateway.conversation_key"] == f"telegram:{bot.name}:{chat['id']}:-"
    assert isinstance(attributes["gateway.inbox_id"], int) and attributes["gateway.bot"] == bot.name
    assert not turn.parent_span_id
    in_turn = [span for span in spans if span.trace_id == turn.trace_id and span is not turn]
    children = [span for span in in_turn if span.parent_span_id == turn.span_id]
    assert [span.name for span in children] == ["invoke_agent assistant"]
    names = {span.name for span in in_turn}
    assert any(name.startswith("chat ") for name in names), names
    assert any(name.startswith("execute_tool write_plan") for name in names), names
    assert all(span.trace_id == turn.trace_id for span in spans)
    assert not any(SECRET_WORDS.encode() in body for body in collector.bodies)
