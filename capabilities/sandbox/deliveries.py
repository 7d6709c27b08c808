"""What crosses between the chat and a workspace: attachments in, skills in, files under `output/` out.

Attachments of the admitting message land in `uploads/`; skills bound to the agent land in
`skills/<name>/` (a skill's script is then on disk beside the shell that may run it, behind `execute`'s
gate, and there is no second execution path). Files the run writes or changes under `output/` are posted
into the chat through the run's outbox when it stops; without an outbox they stay in the workspace.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic_ai.workspaces import Workspace

from capabilities.run import FileRefused, Outbox, Upload

log = logging.getLogger(__name__)

UPLOADS = "uploads"
OUTPUT = "output"
SKILLS = "skills"
MAX_POSTED = 10
"""Files posted from `output/` per run; the rest stay in the workspace and the log says so."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Deliveries:
    uploads: Sequence[Upload] = ()
    skills: Mapping[str, Mapping[str, bytes]] | None = None
    outbox: Outbox | None = None

    async def arrive(self, workspace: Workspace) -> dict[str, str]:
        """Place uploads and skills; returns `output/` as it is now (path → content hash)."""
        placed = [(f"{UPLOADS}/{_safe_name(upload.name)}", upload.data) for upload in self.uploads]
        placed += [(_inside(f"{SKILLS}/{_safe_name(name)}", relative), data)
                   for name, files in (self.skills or {}).items() for relative, data in files.items()]
        for path, data in placed:
            try:
                await workspace.write_bytes(path, data)
            except OSError as exc:  # a full workspace: the run goes on without this file, and the log says so
                log.warning("could not place %s in the workspace: %s", path, exc)
        return await outputs(workspace) if self.outbox is not None else {}

    async def depart(self, workspace: Workspace, before: Mapping[str, str]) -> None:
        """Post every file under `output/` that is new or changed since `arrive`."""
        if self.outbox is None:
            return
        now = await outputs(workspace)
        fresh = [path for path, digest in sorted(now.items()) if before.get(path) != digest]
        for path in fresh[:MAX_POSTED]:
            data = await workspace.read_bytes(path)
            name = posixpath.basename(path)
            try:
                await self.outbox.post_file(name=name, data=data, mime_type=mimetypes.guess_type(name)[0])
            except FileRefused as refused:  # the run has answered: one file the chat cannot take never undoes it
                log.warning("%s stays in the workspace: %s", path, refused)
        if len(fresh) > MAX_POSTED:
            log.info("%d files under output/ were not posted (at most %d per run)", len(fresh) - MAX_POSTED,
                     MAX_POSTED)


async def outputs(workspace: Workspace) -> dict[str, str]:
    """Every file under `output/`, by path, with a hash of its content."""
    found: dict[str, str] = {}
    pending = [await workspace.resolve(OUTPUT)]
    while pending:
        directory = pending.pop()
        try:
            entries = await workspace.list_dir(directory)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir:
                pending.append(entry.path)
            else:
                try:
                    found[entry.path] = hashlib.sha256(await workspace.read_bytes(entry.path)).hexdigest()
                except OSError as exc:  # a link leading nowhere in the workspace's view: nothing to post
                    log.info("%s under output/ cannot be read, so it is not posted: %s", entry.path, exc)
    return found


def _safe_name(name: str) -> str:
    """A file name from a chat: its last component, never a path."""
    base = posixpath.basename(name.replace("\\", "/")).strip() or "file"
    return "_" + base if base in (".", "..") else base


def _inside(folder: str, relative: str) -> str:
    parts = [part for part in relative.replace("\\", "/").split("/") if part not in ("", ".", "..")]
    return posixpath.join(folder, *parts) if parts else posixpath.join(folder, "file")
