"""The files of the local Slack workspace: the external upload flow, and private downloads.

An app posts a file as `files_upload_v2` does: `files.getUploadURLExternal` hands out an upload URL on this
server, the bytes are POSTed there, and `files.completeUploadExternal` shares the file into a channel or
thread. A person's file is added with `add`; its `url_private_download` answers the bytes to a bot token
with `files:read`, and, as Slack does, anyone else gets a sign-in page with status 200.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from local_platforms.server import is_json_array, is_json_object

JSON = dict[str, Any]

SIGN_IN_PAGE = "<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to Slack</body></html>"
"""What Slack serves a file's private URL to a token that may not read it."""


class FileRefused(Exception):
    """A files method refused the call: answered `{"ok": false, "error": error}`."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


@dataclass(slots=True)
class _Upload:
    filename: str
    length: int
    token: str
    content: bytes | None = None


@dataclass(slots=True)
class SlackFiles:
    """Files by id, with their bytes; `reader(token)` tells whether a bearer token may read private files."""

    base_url: Callable[[], str]
    reader: Callable[[str], bool]
    changed: Callable[[], Awaitable[None]]
    """Awaited when an upload arrives, so a waiting test re-checks."""
    files: dict[str, JSON] = field(default_factory=dict[str, JSON])
    content: dict[str, bytes] = field(default_factory=dict[str, bytes])
    private: set[str] = field(default_factory=set[str])
    """Files no bot may read: their URL answers the sign-in page."""
    held: int = 0
    """Upload POSTs still to hold (`hold_uploads`)."""
    holding: int = 0
    """Upload POSTs being held now: their caller waits for an answer that never comes."""
    released: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by `release_uploads`, or when the server stops."""
    stopped: bool = False
    """The server stopped: a held POST is let go unanswered, its bytes not kept."""
    _uploads: dict[str, _Upload] = field(default_factory=dict[str, _Upload])
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/upload/v1/{upload_id}", self._receive)
        app.router.add_get("/files-pri/{file_id}/{name}", self._download)

    def add(self, name: str, content: bytes, *, mimetype: str, user: str = "", private: bool = False) -> JSON:
        """A file as a person's message carries it in `files` (pass it to `user_says(files=[...])`)."""
        file_id = f"F{next(self._ids):08d}"
        url = f"{self.base_url()}/files-pri/{file_id}/{name}"
        info = {"id": file_id, "name": name, "title": name, "mimetype": mimetype, "filetype": name.rsplit(".")[-1],
                "size": len(content), "user": user, "url_private": url, "url_private_download": f"{url}?download=1",
                "mode": "hosted", "is_external": False}
        self.files[file_id] = info
        self.content[file_id] = content
        if private:
            self.private.add(file_id)
        return copy.deepcopy(info)

    def add_clip(self, content: bytes, *, duration_ms: int, user: str = "", mimetype: str = "audio/webm") -> JSON:
        """An audio clip a person recorded in Slack (`subtype: slack_audio`), as a message's `files` carries it:
        Slack serves some as `video/mp4` or `video/webm` (pass that as `mimetype`), and transcribes them itself."""
        suffix = mimetype.rpartition("/")[2]
        info = self.add(f"audio_message.{suffix}", content, mimetype=mimetype, user=user)
        info |= {"subtype": "slack_audio", "media_display_type": "audio", "duration_ms": duration_ms,
                 "transcription": {"status": "processing"}}
        self.files[info["id"]] |= {key: info[key] for key in ("subtype", "media_display_type", "duration_ms")}
        return copy.deepcopy(info)

    def upload_url(self, token: str, params: JSON) -> JSON:
        """`files.getUploadURLExternal`: where to POST the bytes of `filename` (`length` bytes)."""
        filename, length = str(params.get("filename") or ""), params.get("length")
        if not filename:
            raise FileRefused("invalid_arguments")
        try:
            size = int(length) if length is not None else -1
        except ValueError:
            raise FileRefused("invalid_arguments") from None
        if size <= 0:
            raise FileRefused("invalid_arguments")
        file_id = f"F{next(self._ids):08d}"
        self._uploads[file_id] = _Upload(filename=filename, length=size, token=token)
        return {"upload_url": f"{self.base_url()}/upload/v1/{file_id}", "file_id": file_id}

    def complete(self, token: str, params: JSON, user: str) -> list[JSON]:
        """`files.completeUploadExternal`: the uploaded files, stored; the caller shares them into the channel."""
        listed = params.get("files")
        if isinstance(listed, str):
            try:
                listed = json.loads(listed)
            except ValueError:
                raise FileRefused("invalid_arguments") from None
        if not is_json_array(listed) or not listed:
            raise FileRefused("invalid_arguments")
        done: list[JSON] = []
        for item in listed:
            upload = self._uploads.get(str(item.get("id")) if is_json_object(item) else "")
            if upload is None or upload.token != token or upload.content is None:
                raise FileRefused("file_not_found")
        for item in listed:
            upload = self._uploads.pop(str(item["id"]))
            assert upload.content is not None
            info = self.add(upload.filename, upload.content, mimetype=_mimetype(upload.filename), user=user)
            info["title"] = str(item.get("title") or upload.filename)
            self.files[info["id"]]["title"] = info["title"]
            done.append(info)
        return done

    def info(self, params: JSON) -> JSON:
        """`files.info`."""
        found = self.files.get(str(params.get("file") or ""))
        if found is None:
            raise FileRefused("file_not_found")
        return {"file": copy.deepcopy(found)}

    def hold_uploads(self, count: int = 1) -> None:
        """The next `count` upload POSTs are read and then held unanswered until `release_uploads`: the app waits
        mid-upload, as a slow network would leave it; a process killed meanwhile never completes the upload, so
        the file never reaches the channel."""
        self.held += count
        self.released.clear()

    def release_uploads(self) -> None:
        """Let every held upload go on: its bytes are kept and answered as usual."""
        self.released.set()

    async def _receive(self, request: web.Request) -> web.Response:
        upload = self._uploads.get(request.match_info["upload_id"])
        body = await request.read()
        if self.held > 0:
            self.held -= 1
            self.holding += 1
            await self.changed()
            await self.released.wait()
            self.holding -= 1
            if self.stopped:
                return web.Response(status=503, text="the server stopped")
        if upload is None:
            return web.Response(status=404, text="unknown upload")
        if len(body) != upload.length:
            return web.Response(status=400, text=f"expected {upload.length} bytes, got {len(body)}")
        upload.content = body
        return web.Response(text=f"OK - {len(body)}")

    async def _download(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        readable = scheme.lower() == "bearer" and self.reader(token.strip()) and file_id not in self.private
        if file_id not in self.files or not readable:
            return web.Response(text=SIGN_IN_PAGE, content_type="text/html")
        return web.Response(body=self.content[file_id], content_type=self.files[file_id]["mimetype"])


def _mimetype(filename: str) -> str:
    kinds = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp",
             "pdf": "application/pdf", "csv": "text/csv", "txt": "text/plain", "mp3": "audio/mpeg",
             "m4a": "audio/mp4", "ogg": "audio/ogg", "webm": "audio/webm"}
    return kinds.get(filename.rsplit(".", 1)[-1].lower(), "application/octet-stream")
