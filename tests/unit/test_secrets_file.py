"""The secrets file is a dotenv file: what Docker, Kubernetes and a shell's `export` lines write."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.secrets import SecretsFileMissing, SecretSource


def test_export_lines_quotes_and_comments_are_read_as_a_shell_would(tmp_path: Path) -> None:
    path = tmp_path / "secrets.env"
    path.write_text("# mounted by the orchestrator\n"
                    "export TG_TOKEN=123:from-file\n"
                    "SLACK_TOKEN='xoxb-quoted # not a comment'\n"
                    'MULTI="line one\nline two"\n'
                    "PLAIN=value  # a comment\n")
    source = SecretSource(environ={}, file_values=SecretSource.load(path).file_values)
    assert source.get("TG_TOKEN") == "123:from-file"
    assert source.get("SLACK_TOKEN") == "xoxb-quoted # not a comment"
    assert source.get("MULTI") == "line one\nline two"
    assert source.get("PLAIN") == "value"


def test_the_environment_wins_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "secrets.env"
    path.write_text("TG_TOKEN=from-file\n")
    source = SecretSource(environ={"TG_TOKEN": "from-env"}, file_values=SecretSource.load(path).file_values)
    assert source.get("TG_TOKEN") == "from-env"


def test_a_missing_file_is_named_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(SecretsFileMissing, match=r"GATEWAY_SECRETS_FILE: cannot read .*unset GATEWAY_SECRETS_FILE"):
        SecretSource.load(tmp_path / "absent.env")
