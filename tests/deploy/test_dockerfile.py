"""The image's base is pinned by digest, so a rebuild of the same commit starts from the same bytes."""

from __future__ import annotations

import re
from pathlib import Path

DOCKERFILE = Path(__file__).resolve().parents[2] / "deploy" / "Dockerfile"


def test_every_base_image_is_pinned_by_digest() -> None:
    bases = [line.split()[1] for line in DOCKERFILE.read_text().splitlines() if line.upper().startswith("FROM ")]
    assert bases, "no FROM line"
    for base in bases:
        assert re.fullmatch(r"[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}", base), f"{base} is not pinned by digest"
