"""An OpenAI-compatible `POST /v1/audio/transcriptions` on loopback: the multipart upload OpenAI's SDK sends (`file`,
`model`, `response_format`), answered `{"text": ...}` with the transcript a test set for those bytes."""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Self

from aiohttp import web
from pydantic_ai.models import override_allow_model_requests

from tests.support.loopback import serving


@dataclass(frozen=True, slots=True, kw_only=True)
class Heard:
    """One transcription request, as it crossed the wire."""

    model: str
    filename: str
    content_type: str
    data: bytes
    authorization: str
    response_format: str


class FakeTranscriptions:
    """Answers each recording with `transcripts[its bytes]` (else `default`); `requests` holds what arrived. With
    `status` set, every request is refused with that status and OpenAI's error body."""

    def __init__(self, transcripts: dict[bytes, str] | None = None, *, default: str = "",
                 status: int | None = None) -> None:
        self.transcripts = dict(transcripts or {})
        self.default = default
        self.status = status
        self.requests: list[Heard] = []
        self._server = AsyncExitStack()
        self.url = ""

    async def __aenter__(self) -> Self:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        # The suite forbids real model requests; requests to this server, on loopback, are the point.
        self._server.enter_context(override_allow_model_requests(True))
        self.url = f"{await self._server.enter_async_context(serving(app))}/v1"
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._server.aclose()

    def profile(self, *, model: str = "gpt-4o-mini-transcribe", **limits: float) -> dict[str, Any]:
        """A `models:` profile whose transcription is this server (`limits`: `max_mb`, `max_minutes`); keyless, as
        a local server may be."""
        return {"provider": "openai-chat", "base_url": self.url, "model": "gpt-4.1-mini",
                "transcription": {"model": model, **limits}}

    async def _transcribe(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form.get("file")
        if not isinstance(upload, web.FileField):
            return _refused(400, "the request has no file")
        data = upload.file.read()
        self.requests.append(Heard(model=str(form.get("model", "")), filename=upload.filename,
                                   content_type=upload.content_type, data=data,
                                   authorization=request.headers.get("Authorization", ""),
                                   response_format=str(form.get("response_format", "json"))))
        if self.status is not None:
            return _refused(self.status, "refused")
        return web.json_response({"text": self.transcripts.get(data, self.default)})


def _refused(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "invalid_request_error", "param": None,
                                        "code": None}}, status=status)
