"""The OpenTelemetry SDK's tracer provider, exporting over OTLP/HTTP: built only when an endpoint is configured."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def otlp_provider(service_name: str, endpoint: str) -> TracerProvider:
    """Spans batched to `endpoint` + `/v1/traces`; the exporter reads `OTEL_EXPORTER_OTLP_HEADERS` itself, which is
    how Logfire's token travels."""
    resource = Resource.create({SERVICE_NAME: service_name}).merge(OTELResourceDetector().detect())
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")))
    return provider
