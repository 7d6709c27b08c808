"""Markdown as the model writes it, laid out for each platform's markup: one walk over markdown-it's syntax tree for
every platform, each renderer supplying its platform's marks, and lists and tables laid out as text for platforms
whose markup has neither.

Markdown is parsed with raw HTML disabled, so a `<tag>` the model writes arrives as text, and every mark in
the output comes from a node of the tree. The walk decides which node is which; a subclass decides how
emphasis, code, links, quotes, tables and plain text look on its platform.
"""

from __future__ import annotations

import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import replace
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
