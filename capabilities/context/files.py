"""A standing context file read from its spec: what a run is given and what `gateway check` reads to refuse one.

A module of its own, so the check reads files without loading the knowledge store and the database.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from capabilities.run import ContextFile, SetupFault


class UnreadableContextFile(SetupFault):
    """A context file's path cannot be read as UTF-8 text (the config names the field; `gateway check` refuses it)."""


def read_context_file(spec: Any) -> ContextFile:
    """The file with its text: inline, or read from its path now. `spec` is a `ContextFileSpec` of the config
    (`gateway/config/schema.py`): name, description, mode, format, and `text` or `path`."""
    if spec.text is not None:
        content = spec.text
    else:
        path = Path(spec.path or "")
        try:
            content = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UnreadableContextFile(f"context file {spec.name!r}: {spec.path!r} does not exist") from None
        except IsADirectoryError:
            raise UnreadableContextFile(f"context file {spec.name!r}: {spec.path!r} is a folder, not a file") from None
        except UnicodeDecodeError:
            raise UnreadableContextFile(f"context file {spec.name!r}: {spec.path!r} is not UTF-8 text") from None
    return ContextFile(name=spec.name, description=spec.description, mode=spec.mode, format=spec.format,
                       text=content)


class ContextFiles:
    """The config's context files, each read when a run asks for it: as it is on disk now, read again only when
    its modification time or size changed, so a turn costs a `stat` per file it binds, not a read."""

    def __init__(self, specs: Iterable[Any]) -> None:
        self._specs = {spec.name: spec for spec in specs}
        self._read: dict[str, tuple[tuple[int, int], ContextFile]] = {}
        """Each context file read from a path, by name, with the (mtime, size) it had when read."""

    def get(self, name: str) -> ContextFile | None:
        spec = self._specs.get(name)
        if spec is None:
            return None
        if spec.path is None:
            return read_context_file(spec)
        try:
            found = Path(spec.path).stat()
        except OSError:
            return read_context_file(spec)  # raises the readable error
        signature = (found.st_mtime_ns, found.st_size)
        cached = self._read.get(name)
        if cached is not None and cached[0] == signature:
            return cached[1]
        file = read_context_file(spec)
        self._read[name] = (signature, file)
        return file
