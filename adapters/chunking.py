"""Split a Markdown answer into pieces that fit a platform's maximum message length.

A piece ends at the best boundary that fits: a blank line between paragraphs, else a line break, else
a sentence end, else whitespace; a word longer than the limit is cut hard. A piece never leaves a
fenced code block open: a cut inside a fence closes it, and the next piece reopens it with the same
opening line, both counted against the limit.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_BOUNDARIES = (
    re.compile(r"(?P<gap>\n[ \t]*\n)"),
    re.compile(r"(?P<gap>\n)"),
    re.compile(r"[.!?\u2026][)\]\"'\u201d\u2019\u00bb*_]*(?P<gap>[ \t]+)"),
    re.compile(r"(?P<gap>[ \t]+)"),
)
"""Boundaries in order of preference; a piece ends where `gap` starts and the next begins past it."""

_FENCE_OPEN = re.compile(r"(?P<prefix>[ \t>]*)(?P<marker>`{3,}(?=[^`]*$)|~{3,}).*")
_BLANK_LINES = re.compile(r"(?:[ \t]*\n)*")
_CONTENT = re.compile(r"\S")


@dataclass(frozen=True, slots=True, kw_only=True)
class _Fence:
    """A fenced code block, by offsets into the text being split."""

    start: int
    """Start of the opening line."""
    content_start: int
    content_end: int
    """Start of the closing line, or the end of the text when the fence is never closed."""
    end: int
    """End of the closing line."""
    opener: str
    """The opening line, repeated at the top of a piece that continues the block."""
    closer: str
    """The line that closes the block at the end of a piece cut inside it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Cut:
    end: int
    """The piece ends here."""
    resume: int
    """The next piece starts here, past the whitespace the cut consumed."""


def split_text(text: str, limit: int) -> list[str]:
    """Split Markdown into pieces of at most `limit` characters, keeping code fences balanced.

    Pieces are stripped of leading and trailing blank lines and never empty; joined, they hold every
    word of `text` in order (a word longer than `limit` is spread over several pieces).

    Raises:
        ValueError: `limit` is not positive.
    """
    if limit < 1:
        raise ValueError(f"limit must be a positive number of characters, got {limit!r}")
    text = text.rstrip()
    # A fence whose own opening and closing lines leave no room for code is split as plain text.
    fences = [fence for fence in _find_fences(text) if len(fence.opener) + len(fence.closer) + 3 <= limit]
    pieces: list[str] = []
    reopen = ""
    position = _skip_blank_lines(text, 0)
    while position < len(text):
        if len(reopen) + len(text) - position <= limit:
            _append(pieces, reopen + text[position:])
            break
        cut, fence = _choose_cut(text, position, limit - len(reopen), fences)
        closer = f"\n{fence.closer}" if fence else ""
        _append(pieces, reopen + text[position : cut.end].rstrip() + closer)
        reopen = f"{fence.opener}\n" if fence else ""
        position = _skip_blank_lines(text, cut.resume)
    return pieces


def _choose_cut(text: str, position: int, budget: int, fences: list[_Fence]) -> tuple[_Cut, _Fence | None]:
    """The cut at the best boundary within `budget`, and the fence it falls inside, if any."""
    for boundary in _BOUNDARIES:
        found = _last_cut(boundary, text, position, budget, fences)
        if found:
            return found
    return _hard_cut(text, position, budget, fences)


def _last_cut(
    boundary: re.Pattern[str], text: str, position: int, budget: int, fences: list[_Fence]
) -> tuple[_Cut, _Fence | None] | None:
    found = None
    for match in boundary.finditer(text, position):
        cut = _Cut(end=match.start("gap"), resume=match.end("gap"))
        if cut.end - position > budget:
            break
        placed = _place(text, cut, fences)
        if placed and _fits(cut, placed[1], position, budget) and _has_content(text, position, cut.end):
            found = placed
    return found


def _hard_cut(text: str, position: int, budget: int, fences: list[_Fence]) -> tuple[_Cut, _Fence | None]:
    """Cut inside a word: as late as fits, stepping back off a fence's opening or closing line."""
    for end in range(position + budget, position, -1):
        placed = _place(text, _Cut(end=end, resume=end), fences)
        if placed and _fits(placed[0], placed[1], position, budget):
            return placed
    # The window holds nothing but blank code: close the fence around it anyway, never leave it open.
    for end in range(position + budget, position, -1):
        fence = _enclosing(fences, end)
        if fence is None or _fits(_Cut(end=end, resume=end), fence, position, budget):
            return _Cut(end=end, resume=end), fence
    return _Cut(end=position + budget, resume=position + budget), None


def _place(text: str, cut: _Cut, fences: list[_Fence]) -> tuple[_Cut, _Fence | None] | None:
    """The cut with the fence it falls inside; None when it would split a fence line or leave no code."""
    fence = _enclosing(fences, cut.end)
    if fence is None:
        return cut, None
    keeps_code = _has_content(text, fence.content_start, cut.end)
    leaves_code = _has_content(text, cut.resume, fence.content_end)
    return (cut, fence) if keeps_code and leaves_code else None


def _enclosing(fences: list[_Fence], offset: int) -> _Fence | None:
    return next((fence for fence in fences if fence.start < offset < fence.end), None)


def _fits(cut: _Cut, fence: _Fence | None, position: int, budget: int) -> bool:
    closing = len(fence.closer) + 1 if fence else 0
    return cut.end - position + closing <= budget


def _has_content(text: str, start: int, end: int) -> bool:
    return start < end and _CONTENT.search(text, start, end) is not None


def _skip_blank_lines(text: str, position: int) -> int:
    match = _BLANK_LINES.match(text, position)
    return match.end() if match else position


def _append(pieces: list[str], piece: str) -> None:
    """Add `piece` without leading blank lines and trailing whitespace, unless nothing is left."""
    piece = piece[_skip_blank_lines(piece, 0) :].rstrip()
    if piece:
        pieces.append(piece)


def _find_fences(text: str) -> list[_Fence]:
    """Fenced code blocks, by CommonMark's rule: closed by a line of at least as many of the same marker."""
    fences: list[_Fence] = []
    opening: tuple[int, int, re.Match[str]] | None = None
    for start, end in _lines(text):
        line = text[start:end]
        if opening is None:
            match = _FENCE_OPEN.fullmatch(line)
            opening = (start, end, match) if match else None
        elif _closes(line, opening[2]["marker"]):
            fences.append(_fence(text, opening, content_end=start, end=end))
            opening = None
    if opening is not None:
        fences.append(_fence(text, opening, content_end=len(text), end=len(text)))
    return fences


def _fence(text: str, opening: tuple[int, int, re.Match[str]], *, content_end: int, end: int) -> _Fence:
    start, opener_end, match = opening
    return _Fence(
        start=start,
        content_start=min(opener_end + 1, len(text)),
        content_end=content_end,
        end=end,
        opener=text[start:opener_end],
        closer=match["prefix"] + match["marker"],
    )


def _closes(line: str, marker: str) -> bool:
    closing = line.lstrip(" \t>").rstrip(" \t")
    return len(closing) >= len(marker) and closing == marker[0] * len(closing)


def _lines(text: str) -> Iterator[tuple[int, int]]:
    """Start and end offsets of each line, without its newline."""
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        yield start, end
        start = end + 1
