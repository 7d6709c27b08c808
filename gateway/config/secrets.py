"""Where credentials come from: the environment first, then an optional secrets file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from dotenv import dotenv_values


class SecretLookup(Protocol):
    """What reading a secret needs: `SecretSource`, or a mapping-like stand-in."""

    def get(self, name: str) -> str | None: ...


class SecretsFileMissing(Exception):
    """`GATEWAY_SECRETS_FILE` names a file that cannot be read; the message says which and what to do."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretSource:
    """Reads a dotenv secrets file (as Docker and Kubernetes mount them) behind the environment.

    The file is parsed by python-dotenv: `NAME=value`, `export NAME=value`, quoted values with escapes,
    comments, and multi-line values in double quotes.
    """

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    file_values: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, secrets_file: Path | None) -> SecretSource:
        """Raises `SecretsFileMissing` when `secrets_file` is given but is not a readable file."""
        if secrets_file is None:
            return cls()
        if not secrets_file.is_file() or not os.access(secrets_file, os.R_OK):
            raise SecretsFileMissing(f"GATEWAY_SECRETS_FILE: cannot read {str(secrets_file)!r} (no such readable "
                                     "file); create it with NAME=value lines, or unset GATEWAY_SECRETS_FILE")
        values = dotenv_values(secrets_file, interpolate=False)
        return cls(file_values={name: value for name, value in values.items() if value is not None})

    def get(self, name: str) -> str | None:
        return self.environ.get(name) or self.file_values.get(name)
