"""The files of the local Mattermost server: `POST /api/v4/files` (multipart) and `GET /api/v4/files/{id}`.

A file belongs to the channel it was uploaded into; only that channel's members may upload into it or
read it back (403 otherwise), as the real server checks. A post names files by `file_ids`, and clients see
their infos under `metadata.files`.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

JSON = dict[str, Any]

MAX_FILE_SIZE = 100 * 2**20
"""The server's default `FileSettings.MaxFileSize`."""


@dataclass(slots=True)
class MattermostFiles:
    """File infos and bytes by id. `user_of(token)` authenticates, `member(channel, user)` authorizes."""

    user_of: Callable[[str], str | None]
    member: Callable[[str, str], bool]
    notify: Callable[[], None]
    infos: dict[str, JSON] = field(default_factory=dict[str, JSON])
    content: dict[str, bytes] = field(default_factory=dict[str, bytes])
    max_file_size: int = MAX_FILE_SIZE

    def routes(self, app: web.Application, api: str) -> None:
        app.router.add_post(api + "/files", self._upload)
        app.router.add_get(api + "/files/{file_id}", self._download)

    def add(self, channel_id: str, user_id: str, name: str, content: bytes, *, mime_type: str) -> JSON:
        """Store a file in a channel as `user_id` uploaded it; returns its info."""
        info: JSON = {"id": uuid.uuid4().hex[:26], "user_id": user_id, "channel_id": channel_id, "name": name,
                "extension": name.rsplit(".", 1)[-1] if "." in name else "", "size": len(content),
                "mime_type": mime_type, "post_id": ""}
        self.infos[info["id"]] = info
        self.content[info["id"]] = content
        return copy.deepcopy(info)

    def attach(self, post: JSON, file_ids: list[str], user_id: str) -> None:
        """Give `post` the files it names, refusing ids that are not its author's uploads in its channel."""
        infos = [self.infos.get(str(file_id)) for file_id in file_ids]
        if any(info is None or info["channel_id"] != post["channel_id"] or info["user_id"] != user_id
               for info in infos):
            raise LookupError("a file id names no file uploaded into this channel by this user")
        for info in infos:
            assert info is not None
            info["post_id"] = post["id"]
        post["file_ids"] = [info["id"] for info in infos if info]
        post["metadata"] = {**post.get("metadata", {}), "files": [copy.deepcopy(info) for info in infos]}

    async def _upload(self, request: web.Request) -> web.Response:
        user_id = self.user_of(request.headers.get("Authorization", "").removeprefix("Bearer ").strip())
        if user_id is None:
            return _error(401, "api.context.session_expired.app_error", "Invalid or expired session.")
        if request.content_length is not None and request.content_length > self.max_file_size:
            return _error(413, "api.file.upload_file.too_large_detailed.app_error", "Unable to upload file. "
                          "File is too large.")
        form = await request.post()
        channel_id = str(form.get("channel_id") or request.query.get("channel_id") or "")
        if not self.member(channel_id, user_id):
            return _error(403, "api.context.permissions.app_error", "You do not have the appropriate permissions.")
        uploads = [part for key, part in form.items() if key == "files" and not isinstance(part, str)]
        if not uploads:
            return _error(400, "api.file.upload_file.incorrect_number_of_files.app_error", "No files were sent.")
        infos = []
        for part in uploads:
            content = part.file.read()  # type: ignore[union-attr]
            infos.append(self.add(channel_id, user_id, part.filename or "file", content,  # type: ignore[union-attr]
                                  mime_type=part.content_type or "application/octet-stream"))  # type: ignore[union-attr]
        self.notify()
        return _json({"file_infos": infos, "client_ids": []}, 201)

    async def _download(self, request: web.Request) -> web.Response:
        user_id = self.user_of(request.headers.get("Authorization", "").removeprefix("Bearer ").strip())
        if user_id is None:
            return _error(401, "api.context.session_expired.app_error", "Invalid or expired session.")
        info = self.infos.get(request.match_info["file_id"])
        if info is None:
            return _error(404, "app.file_info.get.app_error", "Unable to find the file.")
        if not self.member(info["channel_id"], user_id):
            return _error(403, "api.context.permissions.app_error", "You do not have the appropriate permissions.")
        # Exactly the stored type, as the server sends it: a `.json` file comes as `application/json`.
        return web.Response(body=self.content[info["id"]], headers={"Content-Type": info["mime_type"]})


def _error(status: int, error_id: str, message: str) -> web.Response:
    return _json({"id": error_id, "message": message, "status_code": status}, status)


def _json(body: Any, status: int) -> web.Response:
    return web.Response(body=json.dumps(body).encode(), status=status, headers={"Content-Type": "application/json"})
