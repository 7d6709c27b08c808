"""The fake Telegram of the test-suite: the Bot API sandbox the product ships for ``gateway demo``."""

from gateway.telegram_sandbox import ApiCall
from gateway.telegram_sandbox import TelegramSandbox as FakeTelegram

__all__ = ["ApiCall", "FakeTelegram"]
