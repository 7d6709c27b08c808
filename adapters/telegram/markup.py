"""Render an agent's Markdown answer as Telegram HTML, or as plain text when Telegram rejects that.

The HTML subset is the one the Bot API accepts with `parse_mode=HTML`
(https://core.telegram.org/bots/api#html-style). Markdown is parsed by markdown-it-py with raw HTML
disabled, so a `<tag>` the model writes arrives as text and is escaped; every tag in the output comes
from a node of the syntax tree, which keeps the markup balanced whatever the input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from markdown_it.tree import SyntaxTreeNode

from adapters.markdown import Emphasis, MarkdownWalker, table_text

LINK_SCHEMES = frozenset({"http", "https", "tg", "mailto"})
"""Link schemes rendered as `<a href>`; a link with any other scheme shows only its text."""

_LANGUAGE = re.compile(r"[\w+#.-]+")
_INLINE_TAGS = {"strong": "b", "em": "i", "s": "s"}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Context:
    """Where in the tree a node is rendered, and in which output form."""

    plain: bool
    """Plain text: no tags, no escaping."""
    depth: int = 0
    """Number of enclosing lists."""
    indent: str = ""
    """Prefix of continuation lines inside a list item."""
    open_tags: frozenset[str] = frozenset()
    in_link: bool = False
    in_quote: bool = False


class _TelegramHtml(MarkdownWalker[_Context]):
    """Telegram's HTML subset, or (with `plain`) the same layout without tags."""

    indent_unit = "  "

    def emphasis(self, kind: Emphasis, nodes: Sequence[SyntaxTreeNode], ctx: _Context) -> str:
        """Wrap rendered nodes in the kind's tag, unless in plain text or already inside that tag."""
        tag = _INLINE_TAGS[kind]
        if ctx.plain or tag in ctx.open_tags:
            return self.inlines(nodes, ctx)
        inner = self.inlines(nodes, replace(ctx, open_tags=ctx.open_tags | {tag}))
        return f"<{tag}>{inner}</{tag}>" if inner else ""

    def code_inline(self, code: str, ctx: _Context) -> str:
        # A link may not contain a code entity, so inside one the code stays plain text.
        if ctx.plain or ctx.in_link or not code:
            return self.text(code, ctx)
        return f"<code>{_escape(code)}</code>"

    def link(self, href: str, node: SyntaxTreeNode, ctx: _Context) -> str:
        """Render a link or an image (as a link to it) with its text or alt text as the label."""
        label = self.inlines(node.children, replace(ctx, in_link=True)) or self.text(href, ctx)
        if ctx.in_link or not _is_safe(href):
            return label
        if ctx.plain:
            return label if label in (href, href.removeprefix("mailto:")) else f"{label} ({href})"
        return f'<a href="{_escape(href, quote=True)}">{label}</a>'

    def quote(self, node: SyntaxTreeNode, ctx: _Context) -> str:
        inner = self.blocks(node.children, replace(ctx, in_quote=True), "\n\n")
        if ctx.plain:
            return "\n".join(f"> {line}".rstrip() for line in inner.split("\n"))
        # Telegram does not nest blockquotes: an inner quote joins the outer one.
        if ctx.in_quote or not inner:
            return inner
        return f"<blockquote>{inner}</blockquote>"

    def code_block(self, node: SyntaxTreeNode, ctx: _Context) -> str:
        code = node.content.rstrip("\n")
        if not code.strip():
            return ""
        if ctx.plain:
            return code
        language = _language(node.info)
        if language:
            return f'<pre><code class="language-{language}">{_escape(code)}</code></pre>'
        return f"<pre>{_escape(code)}</pre>"

    def table(self, node: SyntaxTreeNode, ctx: _Context) -> str:
        """Render a table as aligned monospace text; cells keep their words but lose their styling."""
        text = table_text(node, lambda cell: self.inlines(cell.children, replace(ctx, plain=True)))
        return text if ctx.plain else f"<pre>{_escape(text)}</pre>"

    def text(self, text: str, ctx: _Context) -> str:
        return text if ctx.plain else _escape(text)


_HTML = _TelegramHtml()


def render_telegram_html(markdown: str) -> str:
    """Render Markdown as the HTML subset Telegram accepts with `parse_mode=HTML`."""
    return _HTML.render(markdown, _Context(plain=False))


def render_telegram_plain(markdown: str) -> str:
    """Render Markdown as readable plain text, the fallback when Telegram rejects the HTML."""
    return _HTML.render(markdown, _Context(plain=True))


def _is_safe(href: str) -> bool:
    try:
        return urlsplit(href).scheme.lower() in LINK_SCHEMES
    except ValueError:
        return False


def _language(info: str) -> str:
    """The fence's language: the first word of its info string, if it looks like a language name."""
    words = info.split()
    return words[0] if words and _LANGUAGE.fullmatch(words[0]) else ""


def _escape(text: str, *, quote: bool = False) -> str:
    """Escape the characters Telegram's HTML parser reads as markup; `quote` also escapes `"`."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return escaped.replace('"', "&quot;") if quote else escaped
