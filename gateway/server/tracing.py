"""OpenTelemetry traces over OTLP/HTTP, one trace per turn; off unless an endpoint is configured.

The tracer provider belongs to one `Gateway` (never the process-wide one), so several gateways in one process
each export their own spans, and stopping a gateway flushes what it still holds.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from opentelemetry.trace import NoOpTracer, Tracer
from pydantic_ai.models.instrumented import InstrumentationSettings

from gateway.config.schema import Settings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

TRACER_NAME = "chat-gateway"


@dataclass(frozen=True, slots=True, kw_only=True)
class Tracing:
    """What the wiring hands down: the tracer for the turn spans, and pydantic-ai's settings for the agent's own
    spans (None: agents are not instrumented)."""

    tracer: Tracer
    instrumentation: InstrumentationSettings | None
    provider: TracerProvider | None = None

    async def shutdown(self) -> None:
        """Export what is still batched and stop; in a thread, since the exporter's requests block."""
        if self.provider is not None:
            await asyncio.to_thread(self.provider.shutdown)


def build_tracing(settings: Settings) -> Tracing:
    """Traces to `OTEL_EXPORTER_OTLP_ENDPOINT` (`gateway/server/otlp.py`), or no tracing at all. Message text and
    tool arguments leave the process only when `GATEWAY_TRACE_CONTENT` opts in."""
    if not settings.otlp_endpoint:
        return Tracing(tracer=NoOpTracer(), instrumentation=None)
    # Deferred: the SDK and its OTLP exporter (protobuf; some 4 MB) load only in a deployment that exports traces.
    from gateway.server.otlp import otlp_provider
    provider = otlp_provider(TRACER_NAME, settings.otlp_endpoint)
    return Tracing(tracer=provider.get_tracer(TRACER_NAME), provider=provider,
                   instrumentation=InstrumentationSettings(tracer_provider=provider,
                                                           include_content=settings.trace_content,
                                                           include_binary_content=settings.trace_content))
