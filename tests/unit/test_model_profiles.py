"""Model profiles resolve to pydantic-ai models, once per name."""

from __future__ import annotations

from pydantic_ai.models.openai import OpenAIChatModel

from gateway.agents.models import ModelResolver
from gateway.config.schema import OpenAIChatProfile
from gateway.config.secrets import SecretSource


def test_an_openai_compatible_profile_points_at_its_server_with_its_key() -> None:
    profile = OpenAIChatProfile(provider="openai-chat", base_url="http://127.0.0.1:11434/v1", model="llama3.1",
                                api_key="${LOCAL_KEY}")
    resolver = ModelResolver({"local": profile}, SecretSource(environ={"LOCAL_KEY": "k-123"}))
    model = resolver.resolve("local").wrapped  # held to its deadlines (tests/e2e/test_model_deadlines.py)
    assert isinstance(model, OpenAIChatModel)
    assert (model.model_name, str(model.client.base_url), model.client.api_key) == (
        "llama3.1", "http://127.0.0.1:11434/v1/", "k-123")


def test_a_model_is_built_once_and_reused_by_later_turns() -> None:
    profile = OpenAIChatProfile(provider="openai-chat", base_url="http://127.0.0.1:8000/v1", model="m")
    resolver = ModelResolver({"local": profile}, SecretSource(environ={}))
    assert resolver.resolve("local") is resolver.resolve("local")
