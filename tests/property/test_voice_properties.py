"""Property-based: a voice note or audio clip as the platform sends it, with any field at any depth turned into any
JSON value, parses to a message, nothing, or `MalformedPayload`, and a recording's duration and size are kept only
when they are numbers of seconds and bytes."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from adapters.base import ApprovalClick, Inbound, MalformedPayload
from tests.contract.chats import SlackChat, TelegramChat, chat_on
from tests.support.mutations import mutated
from tests.support.records import inbox_rows
from tests.support.scripted import echoes

PROPERTY = settings(max_examples=150, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("platform", ["telegram", "slack"])
async def test_any_recording_payload_parses_to_a_message_nothing_or_malformed(platform: str, sqlite_url: str) -> None:
    async with chat_on(platform) as chat, chat.running(sqlite_url, model=echoes()) as gateway:
        if isinstance(chat, TelegramChat):
            await chat.fake.user_sends_voice(chat.bot.token, chat.dm, chat.alice, b"OggS", duration=3)
            await chat.fake.user_sends_voice(chat.bot.token, chat.dm, chat.alice, b"ID3", duration=200,
                                             file_name="song.mp3")
        else:
            assert isinstance(chat, SlackChat)
            clip = chat.fake.files.add_clip(b"webm", duration_ms=3000, mimetype="video/webm")
            await chat.fake.user_says(chat.dm, chat.alice, "", files=[clip])
        await chat.wait_for(lambda: len(chat.answers(chat.dm, {})) >= (2 if platform == "telegram" else 1))
        seeds = [row.payload for row in await inbox_rows(sqlite_url)]
        parse = gateway.adapters[chat.bot_name].parse
        assert all(isinstance(event := parse(seed), Inbound) and event.attachments[0].is_audio for seed in seeds)

        @PROPERTY
        @given(mutated(seeds))
        def parses(payload: Any) -> None:
            try:
                event = parse(payload if isinstance(payload, dict) else {"payload": payload})
            except MalformedPayload:
                return
            assert event is None or isinstance(event, Inbound | ApprovalClick)
            for file in event.attachments if isinstance(event, Inbound) else ():
                assert file.duration is None or (math.isfinite(file.duration) and file.duration >= 0)
                assert file.size is None or (isinstance(file.size, int) and file.size >= 0)

        parses()
