"""Every registered secret is replaced in a log record's message and traceback, however many there are."""

from __future__ import annotations

import logging

import pytest

from gateway.server.logs import SecretRedactor


def record(message: str, *args: object, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc else None
    return logging.LogRecord("gateway", logging.WARNING, __file__, 1, message, args, exc_info)


@pytest.mark.parametrize("count", [1, 1000])
def test_each_token_of_many_bots_is_replaced(count: int) -> None:
    redactor = SecretRedactor()
    tokens = [f"{800_000_000 + n}:AAH{n:06d}secretpart" for n in range(count)]
    for token in tokens:
        redactor.add(token)
    line = record("POST https://api.telegram.org/bot%s/getMe failed; next %s", tokens[-1], tokens[0])
    redactor.filter(line)
    assert line.getMessage() == "POST https://api.telegram.org/bot***/getMe failed; next ***"


def test_a_secret_inside_a_longer_one_leaves_nothing_of_either() -> None:
    redactor = SecretRedactor()
    redactor.add("abcdefgh")
    redactor.add("abcdefgh-and-more")
    line = record("key abcdefgh-and-more and abcdefgh")
    redactor.filter(line)
    assert line.getMessage() == "key *** and ***"


def test_a_traceback_is_scrubbed_and_a_secret_added_later_counts() -> None:
    redactor = SecretRedactor()
    redactor.add("first-secret")
    redactor.filter(record("nothing to hide"))
    redactor.add("later.secret+(x)")  # regex metacharacters are matched literally
    try:
        raise RuntimeError("bad key later.secret+(x) and first-secret")
    except RuntimeError as exc:
        line = record("failed", exc=exc)
    redactor.filter(line)
    assert "later.secret" not in (line.exc_text or "") and "first-secret" not in (line.exc_text or "")
    assert "bad key *** and ***" in (line.exc_text or "")


def test_short_values_are_not_treated_as_secrets() -> None:
    redactor = SecretRedactor()
    redactor.add("short")
    line = record("a short word")
    redactor.filter(line)
    assert line.getMessage() == "a short word"
