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

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from adapters.markdown.layout import render_list, table_text

LINK_SCHEMES = frozenset({"http", "https", "tg", "mailto"})
"""Link schemes rendered as `<a href>`; a link with any other scheme shows only its text."""

HORIZONTAL_RULE = "———"
_INDENT = "  "
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


def render_telegram_html(markdown: str) -> str:
    """Render Markdown as the HTML subset Telegram accepts with `parse_mode=HTML`."""
    return _render(markdown, _Context(plain=False))


def render_telegram_plain(markdown: str) -> str:
    """Render Markdown as readable plain text, the fallback when Telegram rejects the HTML."""
    return _render(markdown, _Context(plain=True))


def _render(markdown: str, ctx: _Context) -> str:
    parser = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    root = SyntaxTreeNode(parser.parse(markdown))
    return _blocks(root.children, ctx, "\n\n").strip("\n")


def _blocks(nodes: Sequence[SyntaxTreeNode], ctx: _Context, separator: str) -> str:
    return separator.join(part for node in nodes if (part := _block(node, ctx)))


def _block(node: SyntaxTreeNode, ctx: _Context) -> str:
    match node.type:
        case "paragraph":
            return _inlines(node.children, ctx)
        case "heading":
            return _tagged("b", node.children, ctx)
        case "bullet_list" | "ordered_list":
            return _list(node, ctx)
        case "blockquote":
            return _quote(node, ctx)
        case "fence" | "code_block":
            return _code_block(node, ctx)
        case "hr":
            return HORIZONTAL_RULE
        case "table":
            return _table(node, ctx)
        case _:
            return _blocks(node.children, ctx, "\n\n") if node.children else _text(node.content, ctx)


def _inlines(nodes: Sequence[SyntaxTreeNode], ctx: _Context) -> str:
    return "".join(_inline(node, ctx) for node in nodes)


def _inline(node: SyntaxTreeNode, ctx: _Context) -> str:
    match node.type:
        case "strong" | "em" | "s":
            return _tagged(_INLINE_TAGS[node.type], node.children, ctx)
        case "code_inline":
            return _code_inline(node.content, ctx)
        case "softbreak" | "hardbreak":
            return "\n" + ctx.indent
        case "link":
            return _link(str(node.attrs.get("href", "")), node, ctx)
        case "image":
            return _link(str(node.attrs.get("src", "")), node, ctx)
        case _:
            return _inlines(node.children, ctx) if node.children else _text(node.content, ctx)


def _tagged(tag: str, nodes: Sequence[SyntaxTreeNode], ctx: _Context) -> str:
    """Wrap rendered nodes in `tag`, unless in plain text or already inside that tag."""
    if ctx.plain or tag in ctx.open_tags:
        return _inlines(nodes, ctx)
    inner = _inlines(nodes, replace(ctx, open_tags=ctx.open_tags | {tag}))
    return f"<{tag}>{inner}</{tag}>" if inner else ""


def _code_inline(code: str, ctx: _Context) -> str:
    # A link may not contain a code entity, so inside one the code stays plain text.
    if ctx.plain or ctx.in_link or not code:
        return _text(code, ctx)
    return f"<code>{_escape(code)}</code>"


def _link(href: str, node: SyntaxTreeNode, ctx: _Context) -> str:
    """Render a link or an image (as a link to it) with its text or alt text as the label."""
    label = _inlines(node.children, replace(ctx, in_link=True)) or _text(href, ctx)
    if ctx.in_link or not _is_safe(href):
        return label
    if ctx.plain:
        return label if label in (href, href.removeprefix("mailto:")) else f"{label} ({href})"
    return f'<a href="{_escape(href, quote=True)}">{label}</a>'


def _is_safe(href: str) -> bool:
    try:
        return urlsplit(href).scheme.lower() in LINK_SCHEMES
    except ValueError:
        return False


def _list(node: SyntaxTreeNode, ctx: _Context) -> str:
    return render_list(node, ctx, _block, unit=_INDENT)


def _quote(node: SyntaxTreeNode, ctx: _Context) -> str:
    inner = _blocks(node.children, replace(ctx, in_quote=True), "\n\n")
    if ctx.plain:
        return "\n".join(f"> {line}".rstrip() for line in inner.split("\n"))
    # Telegram does not nest blockquotes: an inner quote joins the outer one.
    if ctx.in_quote or not inner:
        return inner
    return f"<blockquote>{inner}</blockquote>"


def _code_block(node: SyntaxTreeNode, ctx: _Context) -> str:
    code = node.content.rstrip("\n")
    if not code.strip():
        return ""
    if ctx.plain:
        return code
    language = _language(node.info)
    if language:
        return f'<pre><code class="language-{language}">{_escape(code)}</code></pre>'
    return f"<pre>{_escape(code)}</pre>"


def _language(info: str) -> str:
    """The fence's language: the first word of its info string, if it looks like a language name."""
    words = info.split()
    return words[0] if words and _LANGUAGE.fullmatch(words[0]) else ""


def _table(node: SyntaxTreeNode, ctx: _Context) -> str:
    """Render a table as aligned monospace text; cells keep their words but lose their styling."""
    text = table_text(node, lambda cell: _inlines(cell.children, replace(ctx, plain=True)))
    return text if ctx.plain else f"<pre>{_escape(text)}</pre>"


def _text(text: str, ctx: _Context) -> str:
    return text if ctx.plain else _escape(text)


def _escape(text: str, *, quote: bool = False) -> str:
    """Escape the characters Telegram's HTML parser reads as markup; `quote` also escapes `"`."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return escaped.replace('"', "&quot;") if quote else escaped
