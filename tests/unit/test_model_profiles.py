"""Model profiles resolve to pydantic-ai models, once per name."""

from __future__ import annotations

from pathlib import Path

from pydantic_ai.models.openai import OpenAIChatModel

from capabilities import default_registry
from gateway.agents.models import ModelResolver
from gateway.checks.report import check_file
from gateway.config.schema import ModelStringProfile, OpenAIChatProfile, TranscriptionSpec
from gateway.config.secrets import SecretSource
from tests.support.fakes.transcriptions import FakeTranscriptions


def test_an_openai_compatible_profile_points_at_its_server_with_its_key() -> None:
    profile = OpenAIChatProfile(provider="openai-chat", base_url="http://127.0.0.1:11434/v1", model="llama3.1",
                                api_key="${LOCAL_KEY}")
    resolver = ModelResolver({"local": profile}, SecretSource(environ={"LOCAL_KEY": "k-123"}))
    model = resolver.resolve("local").wrapped  # held to its deadlines (tests/e2e/test_model_deadlines.py)
    assert isinstance(model, OpenAIChatModel)
    assert (model.model_name, str(model.client.base_url), model.client.api_key) == (
        "llama3.1", "http://127.0.0.1:11434/v1/", "k-123")


def test_a_profile_url_with_credentials_is_refused_without_repeating_them(tmp_path: Path) -> None:
    """Every error and `gateway doctor` line names the URL: a password in it would be printed there."""
    config = tmp_path / "gateway.yaml"
    config.write_text("models:\n  local: {provider: openai-chat, base_url: 'https://me:hunter2@llm.example.org/v1', "
                      "model: m}\nagents: [{name: helper, model: local}]\n"
                      "bots: [{name: tg, platform: telegram, token: '${TG_TOKEN}', agent: helper}]\n")
    report = check_file(config, registry=default_registry(), secrets=SecretSource(environ={"TG_TOKEN": "1:a"}))
    lines = report.lines(report.errors)
    assert any("models.local.base_url: must not carry credentials" in line for line in lines), lines
    assert not any("hunter2" in line for line in lines)


def test_a_model_is_built_once_and_reused_by_later_turns() -> None:
    profile = OpenAIChatProfile(provider="openai-chat", base_url="http://127.0.0.1:8000/v1", model="m")
    resolver = ModelResolver({"local": profile}, SecretSource(environ={}))
    assert resolver.resolve("local") is resolver.resolve("local")


async def test_a_profiles_transcription_asks_its_server_with_its_key() -> None:
    async with FakeTranscriptions({b"ogg": "hello"}) as server:
        profile = OpenAIChatProfile(provider="openai-chat", base_url=server.url, model="m", api_key="${LOCAL_KEY}",
                                    transcription=TranscriptionSpec(model="whisper-1"))
        resolver = ModelResolver({"local": profile}, SecretSource(environ={"LOCAL_KEY": "k-123"}))
        transcriber = resolver.transcriber("local")
        assert transcriber is not None and transcriber is resolver.transcriber("local")
        assert await transcriber.transcribe("voice.ogg", b"ogg", "audio/ogg") == "hello"
    [heard] = server.requests
    assert (heard.model, heard.authorization) == ("whisper-1", "Bearer k-123")


async def test_an_openai_model_strings_transcription_reads_openais_own_variables() -> None:
    async with FakeTranscriptions({b"ogg": "hello"}) as server:
        profile = ModelStringProfile(model="openai:gpt-4.1-mini", transcription=TranscriptionSpec(model="whisper-1"))
        secrets = SecretSource(environ={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url})
        transcriber = ModelResolver({"main": profile}, secrets).transcriber("main")
        assert transcriber is not None
        assert await transcriber.transcribe("voice.ogg", b"ogg", "audio/ogg") == "hello"
    assert [heard.authorization for heard in server.requests] == ["Bearer sk-test"]


def test_a_model_without_transcription_hears_no_voice_notes() -> None:
    plain = OpenAIChatProfile(provider="openai-chat", base_url="http://127.0.0.1:8000/v1", model="m")
    resolver = ModelResolver({"local": plain, "named": "openai:gpt-4o"}, SecretSource(environ={}))
    assert [resolver.transcriber(name) for name in ("local", "named", "openai:gpt-4o")] == [None, None, None]
