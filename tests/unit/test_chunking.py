"""Splitting a Markdown answer into pieces that fit a platform's message length."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import pytest

from adapters.markdown import split_text


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    text: str
    limit: int
    pieces: list[str]


CASES = [
    Case(id="empty", text="", limit=10, pieces=[]),
    Case(id="only-blank-lines", text="\n \n\t\n", limit=10, pieces=[]),
    Case(id="fits-whole", text="\n\nshort answer\n\n", limit=50, pieces=["short answer"]),
    Case(
        id="at-paragraph",
        text="First paragraph here.\nSecond line.\n\nNext paragraph.",
        limit=40,
        pieces=["First paragraph here.\nSecond line.", "Next paragraph."],
    ),
    Case(
        id="paragraph-before-later-line",
        text="aa\n\nbb\ncc dd",
        limit=9,
        pieces=["aa", "bb\ncc dd"],
    ),
    Case(id="at-line", text="line one\nline two\nline three", limit=18, pieces=["line one\nline two", "line three"]),
    Case(
        id="at-sentence",
        text="One two. Three four five six",
        limit=20,
        pieces=["One two.", "Three four five six"],
    ),
    Case(id="at-whitespace", text="alpha beta gamma delta", limit=11, pieces=["alpha beta", "gamma delta"]),
    Case(id="hard-cut-long-word", text="abcdefghij", limit=4, pieces=["abcd", "efgh", "ij"]),
    Case(
        id="inside-fence-reopens",
        text="```python\nx = 1\ny = 2\nz = 3\n```",
        limit=20,
        pieces=["```python\nx = 1\n```", "```python\ny = 2\n```", "```python\nz = 3\n```"],
    ),
    Case(
        id="fence-reopened-then-text",
        text="Intro.\n```sh\necho one\necho two\n```\nDone.",
        limit=30,
        pieces=["Intro.\n```sh\necho one\n```", "```sh\necho two\n```\nDone."],
    ),
    Case(
        id="tilde-fence-keeps-marker",
        text="~~~~\naaa bbb\nccc ddd\n~~~~",
        limit=17,
        pieces=["~~~~\naaa bbb\n~~~~", "~~~~\nccc ddd\n~~~~"],
    ),
    Case(
        id="quoted-fence-keeps-prefix",
        text="> ```js\n> a()\n> b()\n> ```",
        limit=20,
        pieces=["> ```js\n> a()\n> ```", "> ```js\n> b()\n> ```"],
    ),
]


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in CASES])
def test_text_splits_at_the_best_boundary(case: Case) -> None:
    assert split_text(case.text, case.limit) == case.pieces


def test_a_10000_character_word_is_hard_cut() -> None:
    assert [len(piece) for piece in split_text("x" * 10_000, 4096)] == [4096, 4096, 1808]


def test_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="limit must be a positive"):
        split_text("text", 0)


FENCE_LINE = re.compile(r"^[ \t>]*(?:`{3,}|~{3,}).*$", re.MULTILINE)
WORDS = ("word", "longerword", "a", "sentence.", "end!", "x" * 70, "`code`", "**bold**", "[l](https://e.org)")


def _random_markdown(rng: random.Random) -> str:
    """Paragraphs, lines and fenced code blocks of random words, one in four blocks a fence."""
    blocks = []
    for _ in range(rng.randint(1, 12)):
        lines = [" ".join(rng.choices(WORDS, k=rng.randint(1, 15))) for _ in range(rng.randint(1, 6))]
        body = "\n".join(lines)
        blocks.append(f"```{rng.choice(['', 'py', 'sh'])}\n{body}\n```" if rng.random() < 0.25 else body)
    return rng.choice(["\n\n", "\n", "\n \n\n"]).join(blocks)


SPLITS = [
    (_random_markdown(rng), rng.choice([30, 45, 80, 200, 1000])) for rng in (random.Random(seed) for seed in range(300))
]


def _content(text: str) -> str:
    """The text's non-space characters, fence lines removed: what a reader must still get."""
    return "".join(FENCE_LINE.sub("", text).split())


def _ends_inside_fence(piece: str) -> bool:
    return len(FENCE_LINE.findall(piece)) % 2 == 1


def test_every_piece_fits_the_limit() -> None:
    assert [(text, limit) for text, limit in SPLITS if any(len(p) > limit for p in split_text(text, limit))] == []


def test_no_piece_is_empty_or_has_blank_edges() -> None:
    pieces = [piece for text, limit in SPLITS for piece in split_text(text, limit)]
    assert [piece for piece in pieces if not piece.strip() or piece != piece.strip("\n").rstrip()] == []


def test_joined_pieces_lose_no_words() -> None:
    lost = [(text, limit) for text, limit in SPLITS if _content("\n".join(split_text(text, limit))) != _content(text)]
    assert lost == []


def test_no_piece_leaves_a_code_fence_open() -> None:
    pieces = [piece for text, limit in SPLITS for piece in split_text(text, limit)]
    assert [piece for piece in pieces if _ends_inside_fence(piece)] == []
