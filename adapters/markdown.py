"""Markdown as the model writes it, laid out for each platform's markup and split to its message length: one
walk over markdown-it's syntax tree for every platform, each renderer supplying its platform's marks, and lists and
tables laid out as text for platforms whose markup has neither.

Markdown is parsed with raw HTML disabled, so a `<tag>` the model writes arrives as text, and every mark in
the output comes from a node of the tree. The walk decides which node is which; a subclass decides how
emphasis, code, links, quotes, tables and plain text look on its platform.

`split_text` cuts an answer into pieces that fit a platform's maximum message length. A piece ends at the best
boundary that fits: a blank line between paragraphs, else a line break, else a sentence end, else whitespace; a
word longer than the limit is cut hard. A piece never leaves a fenced code block open: a cut inside a fence closes
it, and the next piece reopens it with the same opening line, both counted against the limit.
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Literal, TypeVar

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

C = TypeVar("C", bound=Any)
"""A renderer's frozen context dataclass; it must have `depth` and `indent` fields (see `render_list`)."""

Emphasis = Literal["strong", "em", "s"]
BULLET = "•"
LISTS = ("bullet_list", "ordered_list")
HORIZONTAL_RULE = "———"
PARSER = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
"""Built once: a parser's rule chains are compiled on its first parse, which cost more than the parse itself
(a new parser per placeholder and edit was 8 % of a turn's CPU). `parse` keeps no state between calls."""


class MarkdownWalker(ABC, Generic[C]):
    """Blocks are joined by blank lines, inlines run together; a heading is rendered as strong emphasis."""

    indent_unit: str
    """The indentation of one list nesting level."""

    def render(self, markdown: str, ctx: C) -> str:
        root = SyntaxTreeNode(PARSER.parse(markdown))
        return self.blocks(root.children, ctx, "\n\n").strip("\n")

    def blocks(self, nodes: Sequence[SyntaxTreeNode], ctx: C, separator: str) -> str:
        return separator.join(part for node in nodes if (part := self.block(node, ctx)))

    def block(self, node: SyntaxTreeNode, ctx: C) -> str:
        match node.type:
            case "paragraph":
                return self.inlines(node.children, ctx)
            case "heading":
                return self.emphasis("strong", node.children, ctx)
            case "bullet_list" | "ordered_list":
                return render_list(node, ctx, self.block, unit=self.indent_unit)
            case "blockquote":
                return self.quote(node, ctx)
            case "fence" | "code_block":
                return self.code_block(node, ctx)
            case "hr":
                return HORIZONTAL_RULE
            case "table":
                return self.table(node, ctx)
            case _:
                return self.blocks(node.children, ctx, "\n\n") if node.children else self.text(node.content, ctx)

    def inlines(self, nodes: Sequence[SyntaxTreeNode], ctx: C) -> str:
        return "".join(self.inline(node, ctx) for node in nodes)

    def inline(self, node: SyntaxTreeNode, ctx: C) -> str:
        match node.type:
            case "strong" | "em" | "s":
                return self.emphasis(node.type, node.children, ctx)
            case "code_inline":
                return self.code_inline(node.content, ctx)
            case "softbreak" | "hardbreak":
                return "\n" + ctx.indent
            case "link":
                return self.link(str(node.attrs.get("href", "")), node, ctx)
            case "image":
                return self.link(str(node.attrs.get("src", "")), node, ctx)
            case _:
                return self.inlines(node.children, ctx) if node.children else self.text(node.content, ctx)

    # -- the marks ------------------------------------------------------------------------------------

    @abstractmethod
    def emphasis(self, kind: Emphasis, nodes: Sequence[SyntaxTreeNode], ctx: C) -> str:
        """Bold (`strong`, also headings), italic (`em`) or struck-through (`s`) inline nodes."""

    @abstractmethod
    def code_inline(self, code: str, ctx: C) -> str: ...

    @abstractmethod
    def link(self, href: str, node: SyntaxTreeNode, ctx: C) -> str:
        """A link, or an image (as a link to it), labelled by the node's children."""

    @abstractmethod
    def quote(self, node: SyntaxTreeNode, ctx: C) -> str: ...

    @abstractmethod
    def code_block(self, node: SyntaxTreeNode, ctx: C) -> str:
        """A fenced or indented block of code (`node.content`, `node.info` for a fence's language)."""

    @abstractmethod
    def table(self, node: SyntaxTreeNode, ctx: C) -> str: ...

    @abstractmethod
    def text(self, text: str, ctx: C) -> str:
        """Words as they are, escaped as the platform's markup needs."""




def render_list(node: SyntaxTreeNode, ctx: C, block: Callable[[SyntaxTreeNode, C], str], *, unit: str) -> str:
    """One item per line for a tight list, a blank line between the items of a loose one.

    Args:
        block: Renders one block of an item with the item's (deeper) context.
        unit: The indentation of one nesting level.
    """
    tight = all(_is_tight(item) for item in node.children)
    pairs = zip(node.children, _markers(node), strict=True)
    items = [_item(item, marker, ctx, tight, block, unit) for item, marker in pairs]
    return ("\n" if tight else "\n\n").join(items)


def _markers(node: SyntaxTreeNode) -> list[str]:
    if node.type == "bullet_list":
        return [BULLET] * len(node.children)
    start = int(node.attrs.get("start", 1))
    return [f"{start + index}." for index in range(len(node.children))]


def _is_tight(item: SyntaxTreeNode) -> bool:
    """markdown-it hides the paragraphs of a tight list's items."""
    return all(child.hidden for child in item.children if child.type == "paragraph")


def _item(item: SyntaxTreeNode, marker: str, ctx: C, tight: bool, block: Callable[[SyntaxTreeNode, C], str],
          unit: str) -> str:
    inner = replace(ctx, depth=ctx.depth + 1, indent=unit * (ctx.depth + 1))
    parts: list[str] = []
    for child in item.children:
        part = block(child, inner)
        # Nested lists carry their own indentation; later blocks line up under the item's text.
        if part and parts and child.type not in LISTS:
            part = inner.indent + part
        parts.extend([part] if part else [])
    body = ("\n" if tight else "\n\n").join(parts)
    head = f"{unit * ctx.depth}{marker}"
    return f"{head} {body}" if body else head


def table_text(node: SyntaxTreeNode, cell_text: Callable[[SyntaxTreeNode], str]) -> str:
    """A table as aligned monospace text (header, rule, rows); `cell_text` gives a cell's plain words."""
    rows = [row for section in node.children for row in section.children]
    cells = [[cell_text(cell).strip() for cell in row.children] for row in rows]
    columns = max((len(row) for row in cells), default=0)
    cells = [row + [""] * (columns - len(row)) for row in cells]
    aligns = [_alignment(cell) for cell in rows[0].children] if rows else []
    widths = [max(_width(row[index]) for row in cells) for index in range(columns)]
    header, *body = [_table_row(row, widths, aligns) for row in cells]
    return "\n".join([header, "-+-".join("-" * width for width in widths), *body])


def _alignment(cell: SyntaxTreeNode) -> str:
    return str(cell.attrs.get("style", "")).removeprefix("text-align:") or "left"


def _table_row(row: list[str], widths: list[int], aligns: list[str]) -> str:
    padded = (_pad(cell, width, align) for cell, width, align in zip(row, widths, aligns, strict=False))
    return " | ".join(padded).rstrip()


def _pad(text: str, width: int, align: str) -> str:
    room = width - _width(text)
    if align == "right":
        return " " * room + text
    if align == "center":
        return " " * (room // 2) + text + " " * (room - room // 2)
    return text + " " * room


def _width(text: str) -> int:
    """Columns `text` takes in a monospace font: wide East Asian characters take two."""
    return sum(
        0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text
    )


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
