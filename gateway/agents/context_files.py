"""A standing context file read from its spec: what a run is given and what `gateway check` reads to refuse one.

A module of its own, so the check reads files without loading the knowledge store and the database.
"""

from __future__ import annotations

from pathlib import Path

from capabilities.run import ContextFile
from gateway.config.schema import ConfigError, ContextFileSpec


class UnreadableContextFile(ConfigError):
    """A context file's path cannot be read as UTF-8 text (the config names the field; `gateway check` refuses it)."""


def read_context_file(spec: ContextFileSpec) -> ContextFile:
    """The file with its text: inline, or read from its path now."""
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
