"""Every platform a gateway can run, as the union of their adapter classes."""

from __future__ import annotations

from adapters.mattermost.adapter import MattermostAdapter
from adapters.slack.adapter import SlackAdapter
from adapters.telegram.adapter import TelegramAdapter

PlatformAdapter = TelegramAdapter | SlackAdapter | MattermostAdapter
"""One configured bot's adapter. Python has no intersection of protocols, so the code that hands one bot to
several consumers (the wiring, the router) names this union; each consumer types its own parameter by the
protocol of `adapters/protocols.py` it uses."""
