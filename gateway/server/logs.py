"""Logging setup, with every known secret replaced before a record reaches any handler."""

from __future__ import annotations

import logging
import sys


class SecretRedactor(logging.Filter):
    """Rewrites records that contain a registered secret (a token in a URL, a webhook secret)."""

    def __init__(self) -> None:
        super().__init__("secrets")
        self._secrets: set[str] = set()

    def add(self, secret: str) -> None:
        if len(secret) >= 8:
            self._secrets.add(secret)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        message = self._scrub(record.getMessage())
        record.msg, record.args = message, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._scrub(record.exc_text)
        return True

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def install(self) -> None:
        """Attach to every root handler, so records from any library pass through it."""
        quiet_leaky_loggers()
        for handler in logging.getLogger().handlers:
            if self not in handler.filters:
                handler.addFilter(self)

    def uninstall(self) -> None:
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self)


def configure_logging(level: str = "INFO") -> None:
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_leaky_loggers()


def quiet_leaky_loggers() -> None:
    """Libraries that log what must not be logged: request URLs (Telegram puts the token there), SQL parameters.

    slack_sdk logs whole request and response bodies at DEBUG.
    """
    for name in ("httpx", "httpcore", "aiosqlite", "sqlalchemy.engine", "slack_sdk"):
        logging.getLogger(name).setLevel(logging.WARNING)
