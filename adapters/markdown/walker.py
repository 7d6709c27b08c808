"""One walk over markdown-it's syntax tree for every platform; each renderer supplies its platform's marks.

Markdown is parsed with raw HTML disabled, so a `<tag>` the model writes arrives as text, and every mark in
the output comes from a node of the tree. The walk decides which node is which; a subclass decides how
emphasis, code, links, quotes, tables and plain text look on its platform.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Generic, Literal, TypeVar

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from adapters.markdown.layout import render_list

C = TypeVar("C", bound=Any)
"""A renderer's frozen context dataclass; it must have `depth` and `indent` fields (see `layout.render_list`)."""

Emphasis = Literal["strong", "em", "s"]
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
