"""Lists rendered from a markdown-it syntax tree, shared by the platforms whose markup has no list syntax."""

from __future__ import annotations

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
