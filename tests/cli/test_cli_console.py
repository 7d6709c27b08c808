"""`gateway console hash`: a password in, its argon2 hash out, the password itself never printed."""

from __future__ import annotations

from pathlib import Path

import pytest
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


CONSOLE_YAML = """\
agents:
  - name: assistant
    model: test
bots: []
console:
  enabled: true
  operators:
    - {name: ops, password_hash: "${CONSOLE_OPS_HASH}"}
"""


def test_check_says_what_serve_would_refuse_about_an_operators_hash(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(CONSOLE_YAML)
    monkeypatch.delenv("CONSOLE_OPS_HASH", raising=False)
    unset = CliRunner().invoke(app, ["check", "-c", str(config)])
    assert "console.operators['ops'].password_hash: CONSOLE_OPS_HASH is not set" in unset.output
    monkeypatch.setenv("CONSOLE_OPS_HASH", "hunter2")
    plain = CliRunner().invoke(app, ["check", "-c", str(config)])
    assert "CONSOLE_OPS_HASH is not an argon2 hash" in plain.output and "hunter2" not in plain.output


def test_check_refuses_a_console_nobody_can_sign_in_to(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(CONSOLE_YAML.replace('    - {name: ops, password_hash: "${CONSOLE_OPS_HASH}"}\n', "")
                      .replace("  operators:\n", "  operators: []\n"))
    refused = CliRunner().invoke(app, ["check", "-c", str(config)])
    assert refused.exit_code == 2 and "console.operators lists nobody" in refused.output
