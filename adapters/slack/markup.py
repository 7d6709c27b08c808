"""Slack text in both directions: the agent's Markdown to `mrkdwn`, and a person's message to plain words.

Slack's `mrkdwn` (https://docs.slack.dev/messaging/formatting-message-text) has `*bold*`, `_italic_`,
`~strike~`, inline and fenced code, `>` quotes and `<url|label>` links, and nothing for headings, lists
or tables; those are rendered as bold lines, bullet lines and monospace blocks. Markdown is parsed by
markdown-it-py with raw HTML disabled, and every `&`, `<` and `>` of the text is escaped as Slack
requires, so the agent can never write a `<!channel>` ping or a mention: all markup comes from the tree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from markdown_it.tree import SyntaxTreeNode

from adapters.markdown import Emphasis, MarkdownWalker, table_text

LINK_SCHEMES = frozenset({"http", "https", "mailto"})
"""Link schemes rendered as `<url|label>`; a link with any other scheme shows only its label."""

_MARKERS = {"strong": "*", "em": "_", "s": "~"}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Context:
    depth: int = 0
    """Number of enclosing lists."""
    indent: str = ""
    """Prefix of continuation lines inside a list item."""
    open_marks: frozenset[str] = frozenset()
    """Emphasis already open around this node: Slack does not nest the same mark."""


class _Mrkdwn(MarkdownWalker[_Context]):
    indent_unit = "    "

    def emphasis(self, kind: Emphasis, nodes: Sequence[SyntaxTreeNode], ctx: _Context) -> str:
        """Wrap in the mark for `kind`; Slack reads a mark only when it hugs the words, so spaces go outside."""
        if kind in ctx.open_marks:
            return self.inlines(nodes, ctx)
        inner = self.inlines(nodes, replace(ctx, open_marks=ctx.open_marks | {kind}))
        words = inner.strip()
        if not words:
            return inner
        mark = _MARKERS[kind]
        lead, trail = inner[: len(inner) - len(inner.lstrip())], inner[len(inner.rstrip()) :]
        return f"{lead}{mark}{words}{mark}{trail}"

    def code_inline(self, code: str, ctx: _Context) -> str:
        return f"`{_escape(code)}`" if code.strip() else _escape(code)

    def link(self, href: str, node: SyntaxTreeNode, ctx: _Context) -> str:
        """`<url|label>`; the label is plain text, since Slack does not format inside a link."""
        label = _plain(node.children).strip() or href
        if not _is_safe(href):
            return _escape(label)
        url = _escape(href).replace("|", "%7C")
        shown = _escape(label).replace("|", "¦")
        return f"<{url}>" if label in (href, href.removeprefix("mailto:")) and "|" not in href else f"<{url}|{shown}>"

    def quote(self, node: SyntaxTreeNode, ctx: _Context) -> str:
        """Slack quotes one level only, so a nested quote joins the outer one."""
        inner = self.blocks(node.children, ctx, "\n\n")
        lines = [line.removeprefix("> ") for line in inner.split("\n")]
        return "\n".join(f"> {line}".rstrip() for line in lines) if inner else ""

    def code_block(self, node: SyntaxTreeNode, ctx: _Context) -> str:
        """A fence without its language: Slack would show the language name as the first line of code."""
        code = node.content.rstrip("\n")
        return f"```\n{_escape(code)}\n```" if code.strip() else ""

    def table(self, node: SyntaxTreeNode, ctx: _Context) -> str:
        """A table as aligned monospace text; cells keep their words but lose their styling."""
        return f"```\n{_escape(table_text(node, lambda cell: _plain(cell.children)))}\n```"

    def text(self, text: str, ctx: _Context) -> str:
        return _escape(text)


_MRKDWN = _Mrkdwn()


def render_slack_mrkdwn(markdown: str) -> str:
    """Render the agent's Markdown as Slack `mrkdwn`, escaped for `chat.postMessage` and `chat.update`."""
    return _MRKDWN.render(markdown, _Context())


def _is_safe(href: str) -> bool:
    try:
        return urlsplit(href).scheme.lower() in LINK_SCHEMES
    except ValueError:
        return False


def _plain(nodes: Sequence[SyntaxTreeNode]) -> str:
    """The words of inline nodes, without any markup."""
    parts: list[str] = []
    for node in nodes:
        if node.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif node.children:
            parts.append(_plain(node.children))
        else:
            parts.append(node.content)
    return "".join(parts)


def _escape(text: str) -> str:
    """Escape the three characters Slack reads as markup in message text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_ENTITY_OR_LINK = re.compile(r"(<[^<>]*>)|&(amp|lt|gt);")
_FULL_WIDTH = {"amp": "\uff06", "lt": "\uff1c", "gt": "\uff1e"}


def compact_entities(mrkdwn: str) -> str:
    """Rendered text with `&`, `<` and `>` shown as their full-width forms (U+FF06, U+FF1C, U+FF1E), not entities.

    One character instead of four or five: for a piece whose escapes push it past Slack's length cap,
    which is better read with look-alike characters than cut. Links keep their URLs as they are.
    """
    return _ENTITY_OR_LINK.sub(lambda match: match.group(1) or _FULL_WIDTH[match.group(2)], mrkdwn)


# -- from the wire -------------------------------------------------------------------------------------

_ANGLED = re.compile(r"<([^<>]*)>")
_SPECIAL = {"here": "@here", "channel": "@channel", "everyone": "@everyone"}
_DROPPED = "\x00"
"""Stands for a removed mention until the spaces (and a `,` or `:`) around it are tidied."""
_DROPPED_GAP = re.compile(r"[ \t]*\x00[,:]?[ \t]*")


def parse_slack_text(text: str, *, names: Mapping[str, str], drop_user: str | None = None) -> str:
    """A message's text as a person reads it: mentions as `@name`, links as `label (url)`, entities decoded.

    Args:
        names: Display names by user id; an unknown id is shown as `@<id>`.
        drop_user: A user whose mentions are removed (the bot itself: the model knows it is addressed).
    """

    def angled(match: re.Match[str]) -> str:
        return _angled(match.group(1), names, drop_user)

    words = _DROPPED_GAP.sub(" ", _ANGLED.sub(angled, text.replace(_DROPPED, "")))
    return words.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").strip()


def _angled(inner: str, names: Mapping[str, str], drop_user: str | None) -> str:
    """One `<…>` of Slack's wire format: a user, channel, special mention, or link."""
    target, _, label = inner.partition("|")
    if target.startswith("@"):
        user = target[1:]
        return _DROPPED if user == drop_user else f"@{names.get(user) or label.lstrip('@') or user}"
    if target.startswith("#"):
        return f"#{label or target[1:]}"
    if target.startswith("!"):
        command = target[1:].split("^", 1)[0]
        return _SPECIAL.get(command) or label or f"@{command}"
    if not label or label == target or f"mailto:{label}" == target:
        return target.removeprefix("mailto:") if label else target
    return f"{label} ({target})"
