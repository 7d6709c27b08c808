"""Delegates written as Markdown files with front matter, read from an agents folder.

The format and its parser are the harness's (`pydantic_ai_harness.subagents`): `name` (else the file's
stem), `description`, and the body as the instructions. `model`, `color` and `tools` are not read: a
file's delegate runs on the delegating agent's model unless `agent_overrides` names another, and it
reaches only the capabilities `share_with_delegates` lends it — a file cannot grant itself anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capabilities.registry import Deferred

parse_agent_markdown: Deferred[Callable[[str], Any]] = Deferred(
    "pydantic_ai_harness.subagents._disk:parse_agent_markdown")
"""The harness's parser, which loads (pydantic-ai behind it) with the first file read: `gateway check` of a config
that names no agents folder does not import it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentFile:
    name: str
    description: str
    instructions: str
    path: Path


def read_agent_files(folders: list[str]) -> list[AgentFile]:
    """Every `*.md` definition in `folders`, in folder order then file name; a missing folder reads as empty
    (applying a spec refuses one, so at run time it means the files were removed since)."""
    found: list[AgentFile] = []
    for folder in folders:
        root = Path(folder)
        if not root.is_dir():
            continue
        for path in sorted(root.glob("*.md")):
            try:
                parsed = parse_agent_markdown(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
            found.append(AgentFile(name=parsed.name or path.stem, description=parsed.description or "",
                                   instructions=parsed.body, path=path))
    return found
