"""The `state` backend: a workspace kept as one JSON document in this database, capped, with no shell.

`pydantic-ai-backend`'s `StateWorkspaceBackend` serves a `StateBackend` document as the run's workspace;
the library leaves keeping it to the application. So the document is loaded when the run starts and
this run's changes are written back when it stops (a park included, so a resumed run finds its files),
and only the files it changed, so two runs sharing a workspace do not erase each other's work.
"""

from __future__ import annotations

import copy
import errno
import posixpath
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.workspaces import Workspace, WorkspaceRef
from pydantic_ai_backends import StateBackend
from pydantic_ai_backends.workspaces import StateWorkspaceBackend

from capabilities.sandbox.facts import WorkspaceDocuments

STATE_PROVIDER = "state"


class CappedStateBackend(StateBackend):
    """A `StateBackend` that refuses a write taking its files past `max_bytes` in total."""

    def __init__(self, *, max_bytes: int, files: dict[str, Any] | None = None,
                 directories: tuple[str, ...] = ()) -> None:
        super().__init__(files=files, directories=directories)
        self.max_bytes = max_bytes

    def write_bytes(self, path: str, data: bytes) -> None:
        target = posixpath.normpath(posixpath.join("/", path))
        others = sum(self.size(p) for p in self.files if p != target)
        if others + len(data) > self.max_bytes:
            raise OSError(errno.ENOSPC, f"the workspace is full ({others:,} of {self.max_bytes:,} bytes used, "
                                        f"this file is {len(data):,}); delete files you no longer need first")
        super().write_bytes(path, data)


@dataclass
class StoredDocument:
    """One run's copy of a stored workspace: opened from `documents`, kept back into it."""

    key: str
    label: str
    documents: WorkspaceDocuments | None
    """None: the workspace lives in memory for this run only."""
    max_bytes: int
    _store: dict[str, StateBackend] = field(default_factory=dict[str, StateBackend], init=False, repr=False)
    _opened: dict[str, Any] = field(default_factory=dict[str, Any], init=False, repr=False)
    _opened_dirs: set[str] = field(default_factory=set[str], init=False, repr=False)
    _is_open: bool = field(default=False, init=False, repr=False)
    workspace: Workspace = field(init=False, repr=False)
    """What the run's tools work in: the library's backend over this run's copy of the document."""

    def __post_init__(self) -> None:
        self._store[self.key] = CappedStateBackend(max_bytes=self.max_bytes)
        self.workspace = Workspace(StateWorkspaceBackend(
            self._store, ref=WorkspaceRef(provider=STATE_PROVIDER, id=self.key)))

    @property
    def state(self) -> StateBackend:
        return self._store[self.key]

    async def open(self) -> None:
        """Load the stored workspace; a second open in the same run (a delegate it is lent to) changes nothing."""
        if self._is_open:
            return
        self._is_open = True
        stored = await self.documents.load(self.key) if self.documents is not None else None
        if stored is not None:
            self._store[self.key] = CappedStateBackend(max_bytes=self.max_bytes, files=copy.deepcopy(stored.files),
                                                       directories=stored.directories)
        self._opened = copy.deepcopy(self.state.files)
        self._opened_dirs = set(self.state.directories)

    async def keep(self) -> None:
        if self.documents is None:
            return
        files = self.state.files
        changed: dict[str, Any | None] = {path: data for path, data in files.items() if self._opened.get(path) != data}
        changed |= {path: None for path in self._opened if path not in files}
        if changed or set(self.state.directories) != self._opened_dirs:
            await self.documents.save(self.key, label=self.label, changed=changed,
                                      directories=sorted(self.state.directories))
            self._opened = copy.deepcopy(files)
            self._opened_dirs = set(self.state.directories)
