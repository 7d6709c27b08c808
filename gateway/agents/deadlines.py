"""A model held to its profile's deadlines: connect, first token, whole request, and one provider retry at most.

pydantic-ai enforces the whole-request deadline itself (`request_timeout`, over every attempt the provider client
makes and every pull of a stream) and hands the connect deadline to the provider's HTTP client (`timeout`); the
first-token deadline is ours, around opening the stream, which for the OpenAI and Anthropic clients includes
waiting for the first chunk. A model that stalls thus ends its request within `whole` at the latest, with
`ModelRequestTimeout`, which the turn turns into a notice.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import httpx
from pydantic_ai import ModelMessage, RunContext
from pydantic_ai.exceptions import ModelRequestTimeout
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings, merge_model_settings

from gateway.config.schema import ModelDeadlines

PROVIDER_RETRIES = 1
"""Retries the provider's client may make of one request (its own default is 2); every attempt runs inside the
same whole-request deadline, so a retry spends the turn's time rather than adding to it."""


class FirstTokenTimeout(ModelRequestTimeout):
    """The model sent nothing within the first-token deadline."""

    def __init__(self, model_name: str, timeout: float) -> None:
        super().__init__(model_name, timeout)
        self.message = f"model {model_name!r} sent no output within {timeout:g} seconds (the first-token deadline)"


def deadline_settings(deadlines: ModelDeadlines, unsupported: frozenset[str]) -> ModelSettings:
    """The settings that carry `deadlines` to pydantic-ai; those the model ignores are left out, so no request
    warns about them."""
    settings = ModelSettings(request_timeout=deadlines.whole)
    if "timeout" not in unsupported:  # per attempt: the connect phase short, reading as long as the request may
        settings["timeout"] = httpx.Timeout(deadlines.whole, connect=deadlines.connect)
    if "max_retries" not in unsupported:
        settings["max_retries"] = PROVIDER_RETRIES
    return settings


class DeadlineModel(WrapperModel):
    """`wrapped` with `deadlines`: the whole and connect ones through its settings, the first-token one here."""

    def __init__(self, wrapped: Model, deadlines: ModelDeadlines) -> None:
        super().__init__(wrapped)
        self.deadlines = deadlines
        self._settings_with_deadlines = merge_model_settings(
            wrapped.settings, deadline_settings(deadlines, wrapped._unsupported_settings()))

    @property
    def settings(self) -> ModelSettings | None:
        return self._settings_with_deadlines

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: RunContext[Any] | None = None) -> AsyncGenerator[StreamedResponse]:
        opening = self.wrapped.request_stream(messages, model_settings, model_request_parameters, run_context)
        async with AsyncExitStack() as stack:
            # A scope opened and closed here, never held across the yield: the stream may be read from another task.
            response: StreamedResponse | None = None
            with anyio.CancelScope(deadline=anyio.current_time() + self.deadlines.first_token) as scope:
                response = await stack.enter_async_context(opening)
            if scope.cancelled_caught or response is None:
                raise FirstTokenTimeout(self.model_name, self.deadlines.first_token)
            yield response
