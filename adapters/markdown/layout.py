"""Lists and tables laid out as text from a markdown-it syntax tree, for platforms whose markup has neither."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from markdown_it.tree import SyntaxTreeNode

BULLET = "•"
LISTS = ("bullet_list", "ordered_list")


C = TypeVar("C", bound=Any)
"""A renderer's frozen context dataclass; it must have `depth` and `indent` fields."""


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
