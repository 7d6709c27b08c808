"""The fake Telegram of the test-suite: the Bot API sandbox the product ships for ``gateway demo``."""

from gateway.sandbox.telegram import ApiCall
from gateway.sandbox.telegram import TelegramSandbox as FakeTelegram

__all__ = ["ApiCall", "FakeTelegram"]
