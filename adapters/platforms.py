"""Every platform a gateway can run, as the union of their adapter classes: a name for type checkers only, so that
naming it loads no platform's SDK (`gateway/server/platforms.py` loads a platform's adapter with its first bot)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from adapters.mattermost.adapter import MattermostAdapter
    from adapters.slack.adapter import SlackAdapter
    from adapters.telegram.adapter import TelegramAdapter

PlatformAdapter: TypeAlias = "TelegramAdapter | SlackAdapter | MattermostAdapter"
"""One configured bot's adapter. Python has no intersection of protocols, so the code that hands one bot to
several consumers (the wiring, the router) names this union; each consumer types its own parameter by the
protocol of `adapters/protocols.py` it uses."""
