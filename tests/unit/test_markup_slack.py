"""Markdown → Slack mrkdwn (https://docs.slack.dev/messaging/formatting-message-text), and Slack text → words."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import pytest

from adapters.slack.markup import parse_slack_text, render_slack_mrkdwn


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    markdown: str
    expected: str


MRKDWN_CASES = [
    Case(id="bold", markdown="**bold** text", expected="*bold* text"),
    Case(id="italic", markdown="*one* and _two_", expected="_one_ and _two_"),
    Case(id="strikethrough", markdown="~~gone~~", expected="~gone~"),
    Case(id="bold-italic", markdown="***both***", expected="_*both*_"),
    Case(id="spaces-stay-outside-marks", markdown="** padded **", expected="** padded **"),
    Case(id="bold-around-code", markdown="**run `ls`**", expected="*run `ls`*"),
    Case(id="inline-code-escaped", markdown="use `a < b && c`", expected="use `a &lt; b &amp;&amp; c`"),
    Case(id="link", markdown="[site](https://example.com/?a=1&b=2)", expected="<https://example.com/?a=1&amp;b=2|site>"),
    Case(id="autolink", markdown="<https://example.com>", expected="<https://example.com>"),
    Case(id="mailto", markdown="<ann@example.com>", expected="<mailto:ann@example.com>"),
    Case(id="link-label-loses-markup", markdown="[**big** `x`](https://x.org)", expected="<https://x.org|big x>"),
    Case(id="pipe-in-label", markdown="[a|b](https://x.org)", expected="<https://x.org|a¦b>"),
    Case(id="unsafe-scheme-is-text", markdown="[file](ftp://example.com/f)", expected="file"),
    Case(id="relative-link-is-text", markdown="[doc](docs/readme.md)", expected="doc"),
    Case(id="image-is-link", markdown="![a cat](https://e.org/cat.png)", expected="<https://e.org/cat.png|a cat>"),
    Case(id="raw-html-escaped", markdown="<b>hi</b> & <script>", expected="&lt;b&gt;hi&lt;/b&gt; &amp; &lt;script&gt;"),
    Case(id="no-pings-from-the-model", markdown="<!channel> <@U123> <#C1>",
         expected="&lt;!channel&gt; &lt;@U123&gt; &lt;#C1&gt;"),
    Case(id="entities-decoded-then-escaped", markdown="AT&amp;T &copy; 1 &lt; 2", expected="AT&amp;T © 1 &lt; 2"),
    Case(id="heading", markdown="# Title\n\ntext", expected="*Title*\n\ntext"),
    Case(id="bold-inside-heading", markdown="## **Big** deal", expected="*Big deal*"),
    Case(id="paragraphs-and-breaks", markdown="one\ntwo  \nthree\n\nfour", expected="one\ntwo\nthree\n\nfour"),
    Case(id="nested-bullets", markdown="- one\n  - two\n    - three\n- four",
         expected="• one\n    • two\n        • three\n• four"),
    Case(id="ordered-from-three", markdown="3. c\n4. d", expected="3. c\n4. d"),
    Case(id="loose-list", markdown="- one\n\n- two", expected="• one\n\n• two"),
    Case(id="item-with-two-paragraphs", markdown="- first\n\n  more\n- second",
         expected="• first\n\n    more\n\n• second"),
    Case(id="fence-drops-language", markdown="```python\nif a < b:\n    pass\n```",
         expected="```\nif a &lt; b:\n    pass\n```"),
    Case(id="indented-code", markdown="    x = 1", expected="```\nx = 1\n```"),
    Case(id="empty-fence-dropped", markdown="```\n```\n\ntext", expected="text"),
    Case(id="quote", markdown="> said\n> twice", expected="> said\n> twice"),
    Case(id="nested-quote-joins", markdown="> a\n>\n> > b", expected="> a\n>\n> b"),
    Case(id="rule", markdown="a\n\n---\n\nb", expected="a\n\n———\n\nb"),
    Case(id="table-as-code", markdown="| name | n |\n|---|--:|\n| **ab** | 1 |\n| c | 22 |",
         expected="```\nname |  n\n-----+---\nab   |  1\nc    | 22\n```"),
    Case(id="table-escaped", markdown="| a<b |\n|---|\n| x&y |", expected="```\na&lt;b\n---\nx&amp;y\n```"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in MRKDWN_CASES])
def test_markdown_renders_as_slack_mrkdwn(case: Case) -> None:
    assert render_slack_mrkdwn(case.markdown) == case.expected


@dataclass(frozen=True, slots=True, kw_only=True)
class TextCase:
    id: str
    text: str
    expected: str


NAMES = {"U0BOB": "Bob"}
TEXT_CASES = [
    TextCase(id="own-mention-dropped", text="<@U0BOT> what is 2+2?", expected="what is 2+2?"),
    TextCase(id="own-mention-with-comma", text="<@U0BOT>, hi", expected="hi"),
    TextCase(id="own-mention-mid-sentence", text="ask <@U0BOT> about it", expected="ask about it"),
    TextCase(id="own-mention-labelled", text="<@U0BOT|helper> hi", expected="hi"),
    TextCase(id="other-mention-named", text="<@U0BOT> ask <@U0BOB>", expected="ask @Bob"),
    TextCase(id="unknown-mention-keeps-id", text="cc <@U0ZED>", expected="cc @U0ZED"),
    TextCase(id="channel", text="see <#C123|general>", expected="see #general"),
    TextCase(id="broadcasts-are-words", text="<!here> and <!channel>", expected="@here and @channel"),
    TextCase(id="user-group", text="<!subteam^S1|@ops> help", expected="@ops help"),
    TextCase(id="link-with-label", text="<https://x.org|the site>", expected="the site (https://x.org)"),
    TextCase(id="bare-link", text="<https://x.org>", expected="https://x.org"),
    TextCase(id="mailto", text="<mailto:a@b.org|a@b.org>", expected="a@b.org"),
    TextCase(id="entities", text="a &lt;b&gt; &amp;amp; c", expected="a <b> &amp; c"),
    TextCase(id="code-spacing-kept", text="```x  =  1```", expected="```x  =  1```"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in TEXT_CASES])
def test_slack_text_reads_as_words(case: TextCase) -> None:
    assert parse_slack_text(case.text, names=NAMES, drop_user="U0BOT") == case.expected


def test_random_markdown_never_raises_and_never_leaks_angle_brackets() -> None:
    rng = random.Random(7)
    pieces = ["**", "*", "_", "~~", "`", "```\n", "\n", "\n\n", "- ", "1. ", "> ", "# ", "[a](https://x.org)",
              "<b>", "&", "<@U1>", "|", "word", " ", "| a | b |\n|---|---|\n| 1 | 2 |\n"]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        rendered = render_slack_mrkdwn(text)
        # Every `<` left is the start of a link the renderer made itself.
        assert all(match.startswith(("<https://", "<mailto:")) for match in re.findall(r"<[^>]*>?", rendered))
