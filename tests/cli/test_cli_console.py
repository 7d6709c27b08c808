"""`gateway console hash`: a password in, its argon2 hash out, the password itself never printed."""

from __future__ import annotations

from argon2 import PasswordHasher
from typer.testing import CliRunner

from gateway.cli.main import app


def test_the_hash_verifies_the_password_and_the_password_is_not_echoed() -> None:
    result = CliRunner().invoke(app, ["console", "hash"], input="correct horse battery\n")
    assert result.exit_code == 0, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith("$argon2id$") and "correct horse" not in result.output
    assert PasswordHasher().verify(line, "correct horse battery")


def test_a_short_password_is_refused_with_the_fix() -> None:
    result = CliRunner().invoke(app, ["console", "hash"], input="short\n")
    assert result.exit_code == 1 and "use at least 12" in result.output and "short" not in result.output.split(";")[0]
