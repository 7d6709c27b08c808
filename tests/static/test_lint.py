"""The whole tree is `ruff check` clean, with the rules `[tool.ruff]` in pyproject.toml sets: a finding fails the suite
here rather than waiting for someone to run the linter by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    # Exit 1 means findings; anything else is ruff itself failing (a bad setting).
    assert done.returncode == 0, f"ruff check . ({done.returncode}):\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
