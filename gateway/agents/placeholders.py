"""The placeholders a binding's instructions may hold (`{channel_name}`, …), filled by `channel_context.py` once per
run; kept apart so that `gateway check`, which refuses a mistyped one, does not import pydantic-ai with the filler."""

from __future__ import annotations

import re

PLACEHOLDERS = ("channel_name", "channel_purpose", "channel_topic", "member_count", "member_list")
PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
_LOOKALIKE = re.compile(r"\{((?:channel|member)_\w*)\}")


def unknown_placeholders(text: str) -> list[str]:
    """Names written like a placeholder that is not one (`{channel_title}`), so a typo is refused."""
    return sorted({name for name in _LOOKALIKE.findall(text) if name not in PLACEHOLDERS})
