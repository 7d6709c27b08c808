"""Where credentials come from: the environment first, then an optional secrets file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretSource:
    """Reads `NAME=value` lines of a secrets file (as Docker and Kubernetes mount them) behind the env."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    file_values: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, secrets_file: Path | None) -> SecretSource:
        values: dict[str, str] = {}
        if secrets_file is not None:
            for line in secrets_file.read_text(encoding="utf-8").splitlines():
                name, sep, value = line.strip().partition("=")
                if sep and not name.startswith("#"):
                    values[name.strip()] = value.strip().strip("'\"")
        return cls(file_values=values)

    def get(self, name: str) -> str | None:
        return self.environ.get(name) or self.file_values.get(name)
