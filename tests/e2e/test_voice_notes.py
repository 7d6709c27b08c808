"""Voice notes in, end to end: a recording sent on each platform is downloaded the platform's way, transcribed by the
agent's model profile at a local OpenAI-compatible transcription endpoint, and reaches the model as the person's
words, which the conversation keeps; without a transcription model, or past its limits, the chat is told so and no
model runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from pydantic_ai import ModelMessage, ModelRequest, UserPromptPart

from tests.contract.chats import MattermostChat, SlackChat, TelegramChat, chat_on
from tests.support import harness, mattermost_harness, slack_harness
from tests.support.fakes.transcriptions import FakeTranscriptions
from tests.support.scripted import stepped

OGG = b"OggS\x00\x02" + b"\x01" * 200
SAID = "remind me to water the plants tomorrow"
SCRIPTED = "function:scripted"
"""The agent's model in every harness: a profile of that name gives it a transcription, the scripted model answers."""


def prompts(received: list[list[ModelMessage]]) -> list[list[str]]:
    """The user prompts of each model request, as text, oldest first."""
    return [[p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts
             if isinstance(p, UserPromptPart) and isinstance(p.content, str)] for messages in received]


def listening(received: list[list[ModelMessage]]) -> Any:
    """Answers "noted", keeping every request's messages."""
    def step(messages: list[ModelMessage]) -> str:
        received.append(list(messages))
        return "noted"
    return stepped(step)


@pytest_asyncio.fixture
async def transcriptions() -> AsyncIterator[FakeTranscriptions]:
    async with FakeTranscriptions({OGG: SAID}) as server:
        yield server


def transcribed(server: FakeTranscriptions, **limits: float) -> dict[str, Any]:
    return {"models": {SCRIPTED: server.profile(**limits)}}


async def test_a_telegram_voice_note_reaches_the_model_as_its_transcript_and_stays_in_the_history(
        transcriptions: FakeTranscriptions, sqlite_url: str) -> None:
    async with chat_on("telegram") as world:
        assert isinstance(world, TelegramChat)
        received: list[list[ModelMessage]] = []
        async with harness.running_gateway(world.fake, [world.bot], database_url=sqlite_url, redis_url=None,
                                           model=listening(received), top=transcribed(transcriptions)):
            await world.fake.user_sends_voice(world.bot.token, world.dm, world.alice, OGG, duration=4)
            await world.wait_for(lambda: world.answers(world.dm, {}) == ["noted"])
            await world.says(world.dm, "and the cat?")
            await world.wait_for(lambda: len(received) == 2)
    [heard] = transcriptions.requests
    assert (heard.data, heard.filename, heard.content_type, heard.model) == (OGG, "voice.ogg", "audio/ogg",
                                                                            "gpt-4o-mini-transcribe")
    assert prompts(received) == [[f"🎤 {SAID}"], [f"🎤 {SAID}", "and the cat?"]]


async def test_a_slack_audio_clip_served_as_video_reaches_the_model_as_its_transcript(
        transcriptions: FakeTranscriptions, sqlite_url: str) -> None:
    async with chat_on("slack") as world:
        assert isinstance(world, SlackChat)
        received: list[list[ModelMessage]] = []
        clip = world.fake.files.add_clip(OGG, duration_ms=5200, mimetype="video/mp4")
        async with slack_harness.running_gateway(world.fake, [world.bot], database_url=sqlite_url, redis_url=None,
                                                 model=listening(received), top=transcribed(transcriptions)):
            await world.fake.user_says(world.dm, world.alice, "", files=[clip])
            await world.wait_for(lambda: len(received) == 1)
    [heard] = transcriptions.requests
    assert (heard.data, heard.filename, heard.content_type) == (OGG, "audio_message.mp4", "audio/mp4")
    assert prompts(received) == [[f"🎤 {SAID}"]]


async def test_a_mattermost_audio_file_reaches_the_model_as_its_transcript_beside_the_words_typed(
        transcriptions: FakeTranscriptions, sqlite_url: str) -> None:
    async with chat_on("mattermost") as world:
        assert isinstance(world, MattermostChat)
        received: list[list[ModelMessage]] = []
        async with mattermost_harness.running_gateway(world.fake, [world.bot], database_url=sqlite_url,
                                                      model=listening(received), top=transcribed(transcriptions)):
            info = world.fake.files.add(world.dm["id"], world.alice["id"], "memo.m4a", OGG, mime_type="audio/mp4")
            await world.fake.user_posts(world.dm, world.alice, "from the car", file_ids=[info["id"]])
            await world.wait_for(lambda: len(received) == 1)
    [heard] = transcriptions.requests
    assert (heard.data, heard.filename) == (OGG, "memo.m4a")
    assert prompts(received) == [[f"🎤 {SAID}\n\nfrom the car"]]


async def test_without_a_transcription_model_the_chat_is_told_and_no_model_runs(sqlite_url: str) -> None:
    async with chat_on("telegram") as world:
        assert isinstance(world, TelegramChat)
        received: list[list[ModelMessage]] = []
        async with harness.running_gateway(world.fake, [world.bot], database_url=sqlite_url, redis_url=None,
                                           model=listening(received)):
            await world.fake.user_sends_voice(world.bot.token, world.dm, world.alice, OGG, duration=4)
            await world.wait_for(lambda: bool(world.answers(world.dm, {})))
    assert world.answers(world.dm, {}) == ["🎤 Voice notes are not enabled for this bot, so I cannot hear yours. "
                                           "Please type your message instead."]
    assert received == []


async def test_a_voice_note_longer_than_the_limit_is_refused_unheard(transcriptions: FakeTranscriptions,
                                                                     sqlite_url: str) -> None:
    async with chat_on("telegram") as world:
        assert isinstance(world, TelegramChat)
        received: list[list[ModelMessage]] = []
        async with harness.running_gateway(world.fake, [world.bot], database_url=sqlite_url, redis_url=None,
                                           model=listening(received),
                                           top=transcribed(transcriptions, max_minutes=2)):
            await world.fake.user_sends_voice(world.bot.token, world.dm, world.alice, OGG, duration=150)
            await world.wait_for(lambda: bool(world.answers(world.dm, {})))
    [notice] = world.answers(world.dm, {})
    assert notice.startswith("🎤 Your voice note is 2.5 minutes long; I can listen to 2 minutes at most.")
    assert received == [] and transcriptions.requests == []


async def test_an_audio_file_larger_than_the_limit_is_refused_unheard(transcriptions: FakeTranscriptions,
                                                                      sqlite_url: str) -> None:
    async with chat_on("slack") as world:
        assert isinstance(world, SlackChat)
        received: list[list[ModelMessage]] = []
        big = world.fake.files.add("interview.mp3", b"\x00" * 2 * 2**20, mimetype="audio/mpeg")
        async with slack_harness.running_gateway(world.fake, [world.bot], database_url=sqlite_url, redis_url=None,
                                                 model=listening(received),
                                                 top=transcribed(transcriptions, max_mb=1)):
            said = await world.fake.user_says(world.dm, world.alice, "", files=[big])
            await world.wait_for(lambda: bool(world.answers(world.dm, said)))
    [notice] = world.answers(world.dm, said)
    assert notice.startswith("🎤 Your voice note is 2.0 MB; I can listen to 1.0 MB at most.")
    assert received == [] and transcriptions.requests == []


async def test_a_refused_transcription_is_said_and_no_model_runs(sqlite_url: str) -> None:
    async with FakeTranscriptions(status=401) as refusing, chat_on("telegram") as world:
        assert isinstance(world, TelegramChat)
        received: list[list[ModelMessage]] = []
        async with harness.running_gateway(world.fake, [world.bot], database_url=sqlite_url, redis_url=None,
                                           model=listening(received), top=transcribed(refusing)):
            await world.fake.user_sends_voice(world.bot.token, world.dm, world.alice, OGG, duration=4)
            await world.wait_for(lambda: bool(world.answers(world.dm, {})))
    [notice] = world.answers(world.dm, {})
    assert notice.startswith("🎤 I could not hear your voice note: the transcription service refused the gateway's key")
    assert received == []
