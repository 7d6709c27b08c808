"""Platform-supplied text as a model reads it: one line, so that a message body, a channel topic or a display name
cannot forge a line of its own in a tool's reply or in the instructions. The core's channel facts and the
capabilities that quote chat text use the same two functions."""

from __future__ import annotations

import re

from adapters.base import Speaker

_BREAKS = re.compile(r"[\r\n\u2028\u2029]+")
_SPACES = re.compile(r"[\s\x00-\x1f\x7f]+")


def flatten(text: str | None, *, limit: int = 300) -> str:
    """One line of at most `limit` characters: line breaks become ` ⏎ `, other whitespace one space."""
    if not text:
        return ""
    line = _SPACES.sub(" ", _BREAKS.sub(" ⏎ ", text)).strip()
    return line if len(line) <= limit else line[:limit - 1] + "…"


def person_line(person: Speaker) -> str:
    """A person as one line: their name, their handle, and whether they are a bot."""
    handle = f" (@{flatten(person.handle, limit=64)})" if person.handle else ""
    return f"{flatten(person.display_name, limit=80) or person.platform_user_id}{handle}" + (
        " [bot]" if person.is_bot else "")
