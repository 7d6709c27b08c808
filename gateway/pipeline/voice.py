"""Voice notes and audio files a person sent, made the words of their turn.

The agent's model profile transcribes them (`models.<name>.transcription`, `gateway/agents/transcription.py`): the
turn's text becomes each transcript marked "🎤", then whatever the person typed beside it, so the conversation's
history and its search keep what was said, and the model reads it as the person's words. The chat is told instead,
and no model runs, when the agent has no transcription, when a recording is longer or larger than its limits allow,
or when one cannot be made text.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from adapters.base import FileRef, FileUnreadable, Inbound, byte_size
from adapters.protocols import ReadsFiles
from gateway.agents.transcription import Transcriber, TranscriptionFailed

log = logging.getLogger(__name__)

MARK = "🎤"
"""Opens each transcript in the turn's text: the model, the history and a search read it as a voice note."""
NOT_ENABLED = (f"{MARK} Voice notes are not enabled for this bot, so I cannot hear yours. Please type your message "
               "instead.")
NOT_HEARD = f"{MARK} I could not hear your voice note"


def refusal(files: tuple[FileRef, ...], transcriber: Transcriber | None) -> str | None:
    """What the chat is told instead of a turn, before anything is downloaded: voice notes are off for this agent,
    or a recording is longer or larger than its limits as the platform declared it. None: the message goes on."""
    recordings = [file for file in files if file.is_audio]
    if not recordings:
        return None
    if transcriber is None:
        return NOT_ENABLED
    for file in recordings:
        if file.duration is not None and file.duration > transcriber.max_seconds:
            return (f"{MARK} Your voice note is {_minutes(file.duration)} long; I can listen to "
                    f"{_minutes(transcriber.max_seconds)} at most. Please send a shorter one, or type your message.")
        if file.size is not None and file.size > transcriber.max_bytes:
            return (f"{MARK} Your voice note is {byte_size(file.size)}; I can listen to "
                    f"{byte_size(transcriber.max_bytes)} at most. Please send a shorter one, or type your message.")
    return None


async def heard(reader: ReadsFiles, inbound: Inbound, transcriber: Transcriber) -> Inbound | str:
    """The message with its recordings' words as its text and its other files, or what the chat is told when a
    recording could not be made text (too large once downloaded, refused, silent)."""
    said: list[str] = []
    for file in (file for file in inbound.attachments if file.is_audio):
        try:
            data = await reader.fetch_file(file, max_bytes=transcriber.max_bytes)
            words = await transcriber.transcribe(file.name, data, file.mime_type or "audio/ogg")
        except (FileUnreadable, TranscriptionFailed) as exc:
            log.info("voice note %s not heard: %s", file.name, exc)
            return f"{NOT_HEARD}: {exc}. Please send it again, or type your message."
        except (TimeoutError, ConnectionError) as exc:  # the download got no answer
            log.warning("voice note %s could not be downloaded: %s: %s", file.name, type(exc).__name__, exc)
            return f"{NOT_HEARD}: the platform did not hand it to me just now. Please send it again."
        if not words:
            return f"{NOT_HEARD}: I found no words in it. Please send it again, or type your message."
        said.append(f"{MARK} {words}")
    typed = [inbound.text] if inbound.text.strip() else []
    return replace(inbound, text="\n\n".join([*said, *typed]),
                   attachments=tuple(file for file in inbound.attachments if not file.is_audio))


async def spoken(reader: ReadsFiles, inbound: Inbound, transcriber: Transcriber | None) -> Inbound | str:
    """The message with its recordings made words (`heard`), or what the chat is told instead (`refusal`); a
    message without recordings as it is."""
    if (refused := refusal(inbound.attachments, transcriber)) is not None:
        return refused
    if transcriber is None or not any(file.is_audio for file in inbound.attachments):
        return inbound
    return await heard(reader, inbound, transcriber)


def _minutes(seconds: float) -> str:
    if seconds < 60:
        return f"{round(seconds)} seconds"
    return f"{seconds / 60:.1f}".removesuffix(".0") + " minutes"
