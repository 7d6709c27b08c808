"""The fake Telegram of the test-suite: the local Bot API server the product ships in ``local_platforms.telegram``."""

from local_platforms.telegram import ApiCall
from local_platforms.telegram import LocalTelegram as FakeTelegram

__all__ = ["ApiCall", "FakeTelegram"]
