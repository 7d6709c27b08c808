"""Voice notes to text: a model profile's `transcription`, asked through the OpenAI SDK's
`audio.transcriptions.create` at the profile's endpoint, with the profile's key and deadlines.

A failure comes back as `TranscriptionFailed`, whose message is for the person who spoke and names no secret.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pydantic import SecretStr

from gateway.config.schema import ModelDeadlines, TranscriptionSpec

if TYPE_CHECKING:
    from openai import AsyncOpenAI

log = logging.getLogger(__name__)

MB = 2**20
"""A megabyte as the gateway counts file sizes everywhere (`adapters.base.byte_size`)."""


class TranscriptionFailed(Exception):
    """The recording could not be made text; the message says why, in words for the person who sent it."""


class Transcriber:
    """One profile's transcription model and its limits; its client opens with the first voice note."""

    def __init__(self, spec: TranscriptionSpec, *, base_url: str | None, api_key: SecretStr,
                 deadlines: ModelDeadlines) -> None:
        """`base_url`: the profile's `/v1` URL; None: the OpenAI SDK's own (`OPENAI_BASE_URL`, else OpenAI)."""
        self.model = spec.model
        self.max_bytes = int(spec.max_mb * MB)
        """The largest recording transcribed."""
        self.max_seconds = spec.max_minutes * 60
        """The longest recording transcribed, where the platform says how long it is."""
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = deadlines.whole
        self._client: AsyncOpenAI | None = None

    async def transcribe(self, name: str, data: bytes, mime_type: str) -> str:
        """The words said in the recording `name` (whose suffix tells the service its format); "" for none."""
        client = self._open()
        try:
            answer = await client.audio.transcriptions.create(model=self.model, file=(name, data, mime_type),
                                                              response_format="json")
        except Exception as exc:
            raise TranscriptionFailed(_reason(exc)) from exc
        return answer.text.strip()

    def _open(self) -> AsyncOpenAI:
        if self._client is None:
            # The OpenAI SDK (20 MB of types) loads with the first voice note, as it does with the first OpenAI model.
            from openai import AsyncOpenAI
            self._client = AsyncOpenAI(api_key=self._api_key.get_secret_value(), base_url=self._base_url,
                                       timeout=self._timeout, max_retries=1)
        return self._client


def _reason(exc: Exception) -> str:
    """Why, for the person; the operator's log line says more (never the key)."""
    status = getattr(exc, "status_code", None)
    log.warning("transcription failed: %s%s", type(exc).__name__, f" (HTTP {status})" if status else "")
    if status is None:  # the SDK's connection errors and timeouts: no answer came
        return "the transcription service did not answer just now (sending it again may work)"
    if status in (401, 403):
        return "the transcription service refused the gateway's key (the operator can fix this)"
    if status == 413:
        return "the recording is too large for the transcription service"
    if status == 400:
        return "the transcription service could not read this recording's format"
    return "the transcription service failed (the gateway's operator finds the cause in its log)"
