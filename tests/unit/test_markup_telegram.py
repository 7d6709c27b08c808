"""Markdown → Telegram HTML (https://core.telegram.org/bots/api#html-style) and its plain-text fallback."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from html.parser import HTMLParser

import pytest

from adapters.telegram.markup import render_telegram_html, render_telegram_plain


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    markdown: str
    expected: str


HTML_CASES = [
    Case(id="bold", markdown="**bold** text", expected="<b>bold</b> text"),
    Case(id="italic", markdown="*one* and _two_", expected="<i>one</i> and <i>two</i>"),
    Case(id="strikethrough", markdown="~~gone~~", expected="<s>gone</s>"),
    Case(id="bold-around-code", markdown="**run `ls`**", expected="<b>run <code>ls</code></b>"),
    Case(id="inline-code-escaped", markdown="use `a < b && c`", expected="use <code>a &lt; b &amp;&amp; c</code>"),
    Case(
        id="link",
        markdown="[site](https://example.com/?a=1&b=2)",
        expected='<a href="https://example.com/?a=1&amp;b=2">site</a>',
    ),
    Case(id="tg-link", markdown="[me](tg://user?id=42)", expected='<a href="tg://user?id=42">me</a>'),
    Case(
        id="mailto-autolink",
        markdown="<ann@example.com>",
        expected='<a href="mailto:ann@example.com">ann@example.com</a>',
    ),
    Case(id="unsafe-scheme-is-text", markdown="[file](ftp://example.com/f)", expected="file"),
    Case(id="relative-link-is-text", markdown="[doc](docs/readme.md)", expected="doc"),
    Case(id="javascript-link-is-text", markdown="[run](javascript:alert(1))", expected="[run](javascript:alert(1))"),
    Case(id="code-inside-link-is-text", markdown="[`cmd`](https://x.org)", expected='<a href="https://x.org">cmd</a>'),
    Case(
        id="image-is-link",
        markdown="![a cat](https://e.org/cat.png)",
        expected='<a href="https://e.org/cat.png">a cat</a>',
    ),
    Case(
        id="raw-html-escaped",
        markdown='<script>alert("x")</script> & <b>hi</b>',
        expected='&lt;script&gt;alert("x")&lt;/script&gt; &amp; &lt;b&gt;hi&lt;/b&gt;',
    ),
    Case(id="entities-decoded-then-escaped", markdown="AT&amp;T &copy; 1 &lt; 2", expected="AT&amp;T © 1 &lt; 2"),
    Case(id="heading", markdown="# Title\n\ntext", expected="<b>Title</b>\n\ntext"),
    Case(id="bold-inside-heading", markdown="## **Big** deal", expected="<b>Big deal</b>"),
    Case(id="paragraphs-and-breaks", markdown="one\ntwo  \nthree\n\nfour", expected="one\ntwo\nthree\n\nfour"),
    Case(
        id="nested-bullets",
        markdown="- one\n  - two\n    - three\n- four",
        expected="• one\n  • two\n    • three\n• four",
    ),
    Case(id="ordered-start", markdown="3. three\n4. four", expected="3. three\n4. four"),
    Case(id="ordered-paren", markdown="1) a\n2) b", expected="1. a\n2. b"),
    Case(id="ordered-inside-bullet", markdown="- steps\n  1. a\n  2. b", expected="• steps\n  1. a\n  2. b"),
    Case(id="loose-list", markdown="- a\n\n- b", expected="• a\n\n• b"),
    Case(id="blockquote", markdown="> quoted **text**", expected="<blockquote>quoted <b>text</b></blockquote>"),
    Case(id="nested-blockquote-flattened", markdown="> a\n>\n> > b", expected="<blockquote>a\n\nb</blockquote>"),
    Case(
        id="fence-with-language",
        markdown="```python\nif a < b:\n    pass\n```",
        expected='<pre><code class="language-python">if a &lt; b:\n    pass</code></pre>',
    ),
    Case(id="fence-without-language", markdown="```\nplain\n```", expected="<pre>plain</pre>"),
    Case(id="fence-hostile-info", markdown='```"><b>\nx\n```', expected="<pre>x</pre>"),
    Case(id="indented-code", markdown="    code & more\n", expected="<pre>code &amp; more</pre>"),
    Case(id="horizontal-rule", markdown="a\n\n---\n\nb", expected="a\n\n———\n\nb"),
    Case(
        id="table-aligned",
        markdown="| Name | Qty |\n|:--|--:|\n| apple | 3 |\n| kiwi | 12 |",
        expected="<pre>Name  | Qty\n------+----\napple |   3\nkiwi  |  12</pre>",
    ),
    Case(id="table-cells-escaped", markdown="| a<b |\n|---|\n| x&y |", expected="<pre>a&lt;b\n---\nx&amp;y</pre>"),
    Case(id="empty", markdown="", expected=""),
]

PLAIN_CASES = [
    Case(id="styles-dropped", markdown="**bold** _it_ `code` ~~s~~", expected="bold it code s"),
    Case(id="link-shows-url", markdown="[site](https://example.com)", expected="site (https://example.com)"),
    Case(id="autolink-once", markdown="<https://example.com>", expected="https://example.com"),
    Case(id="raw-html-kept", markdown="<b>raw</b> & more", expected="<b>raw</b> & more"),
    Case(id="heading-and-list", markdown="# Title\n- a\n- b", expected="Title\n\n• a\n• b"),
    Case(id="quote", markdown="> one\n>\n> two", expected="> one\n>\n> two"),
    Case(id="fence", markdown="```py\nx = 1\n```", expected="x = 1"),
    Case(id="table", markdown="| a | b |\n|---|---|\n| 1 | 22 |", expected="a | b\n--+---\n1 | 22"),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in HTML_CASES])
def test_markdown_renders_as_telegram_html(case: Case) -> None:
    assert render_telegram_html(case.markdown) == case.expected


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in PLAIN_CASES])
def test_markdown_renders_as_plain_text(case: Case) -> None:
    assert render_telegram_plain(case.markdown) == case.expected


TELEGRAM_TAGS = frozenset({"b", "i", "u", "s", "code", "pre", "a", "blockquote", "tg-spoiler"})
TELEGRAM_ENTITIES = frozenset({"lt", "gt", "amp", "quot"})
BARE_AMPERSAND = re.compile(r"&(?!(?:lt|gt|amp|quot);)")


class TelegramHtmlChecker(HTMLParser):
    """Collects every way a string breaks Telegram's HTML rules: tags, attributes, nesting, escaping."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.open_tags: list[str] = []
        self.problems: list[str] = []

    def check(self, markup: str) -> list[str]:
        self.problems.extend(f"bare & at {match.start()}" for match in BARE_AMPERSAND.finditer(markup))
        self.feed(markup)
        self.close()
        self.problems.extend(f"<{tag}> never closed" for tag in self.open_tags)
        return self.problems

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TELEGRAM_TAGS:
            self.problems.append(f"tag <{tag}> not allowed")
        if not _attributes_allowed(tag, attrs):
            self.problems.append(f"attributes {attrs!r} not allowed on <{tag}>")
        if self.open_tags and (self.open_tags[-1] == "code" or (self.open_tags[-1] == "pre" and tag != "code")):
            self.problems.append(f"<{tag}> inside <{self.open_tags[-1]}>")
        if tag in ("a", "blockquote") and tag in self.open_tags:
            self.problems.append(f"<{tag}> nested in itself")
        self.open_tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open_tags or self.open_tags[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.open_tags[-1:]!r}")
            return
        self.open_tags.pop()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.problems.append(f"self-closing <{tag}/>")

    def handle_data(self, data: str) -> None:
        if any(char in data for char in "<>&"):
            self.problems.append(f"unescaped markup character in {data!r}")

    def handle_entityref(self, name: str) -> None:
        if name not in TELEGRAM_ENTITIES:
            self.problems.append(f"entity &{name}; not supported")

    def handle_charref(self, name: str) -> None:
        self.problems.append(f"character reference &#{name}; not expected")

    def handle_comment(self, data: str) -> None:
        self.problems.append(f"comment {data!r}")

    def handle_decl(self, decl: str) -> None:
        self.problems.append(f"declaration {decl!r}")

    def handle_pi(self, data: str) -> None:
        self.problems.append(f"processing instruction {data!r}")

    def unknown_decl(self, data: str) -> None:
        self.problems.append(f"declaration {data!r}")


def _attributes_allowed(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    if tag == "a":
        return len(attrs) == 1 and attrs[0][0] == "href" and bool(attrs[0][1])
    if tag == "code" and attrs:
        return len(attrs) == 1 and attrs[0][0] == "class" and (attrs[0][1] or "").startswith("language-")
    return not attrs


INLINE_MARKS = ("*", "**", "_", "__", "`", "~~", "\\", '"', " ", "\t", "word", "&", "&amp;", "&#60;", "&copy;")
BLOCK_MARKS = ("\n", "\n\n", "# ", "## ", "- ", "  - ", "1. ", "7) ", "> ", ">> ", "    ", "---", "```", "```py\n")
TABLE_MARKS = ("|", "||", "| a | b |\n|---|--:|\n")
LINKS = ("[x](y)", '[x](https://e.org/?a=1&b="2")', "![i](http://e.org/i.png)", "[`c`](tg://x)", "<https://a.b>")
RAW_HTML = ("<", ">", "<b>", "</i>", "<a href='x'>", "<!-- c -->", "[j](javascript:alert(1))")
FRAGMENTS = (*INLINE_MARKS, *BLOCK_MARKS, *TABLE_MARKS, *LINKS, *RAW_HTML)


def _random_markdown(rng: random.Random) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 40)))


RANDOM_MARKDOWN = [_random_markdown(random.Random(seed)) for seed in range(400)]


def test_html_is_well_formed_for_random_markdown() -> None:
    checked = {text: TelegramHtmlChecker().check(render_telegram_html(text)) for text in RANDOM_MARKDOWN}
    assert {text: problems for text, problems in checked.items() if problems} == {}


def test_checker_rejects_broken_markup() -> None:
    assert TelegramHtmlChecker().check('<b><i>x</b></i> & <span>y</span> <a href="z"><a href="w">v</a></a>') != []
