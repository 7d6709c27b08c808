"""Logging setup, with every known secret replaced before a record reaches any handler."""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Literal

LogFormat = Literal["json", "text"]
STRUCTURED = ("turn",)
"""`extra=` keys whose value a JSON line carries as an object of its own (the per-turn line's figures)."""


class SecretRedactor(logging.Filter):
    """Rewrites records that contain a registered secret (a token in a URL, a webhook secret)."""

    def __init__(self) -> None:
        super().__init__("secrets")
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        """Every secret in one alternation, longest first, compiled at the first record after a change: one
        scan per record however many secrets (a gateway of a thousand bots holds a thousand tokens)."""

    def add(self, secret: str) -> None:
        if len(secret) >= 8 and secret not in self._secrets:
            self._secrets.add(secret)
            self._pattern = None

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
        if self._pattern is None:
            self._pattern = re.compile("|".join(map(re.escape, sorted(self._secrets, key=len, reverse=True))))
        return self._pattern.sub("***", text)

    def install(self) -> None:
        """Attach to every root handler, so records from any library pass through it."""
        quiet_leaky_loggers()
        for handler in logging.getLogger().handlers:
            if self not in handler.filters:
                handler.addFilter(self)

    def uninstall(self) -> None:
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and the structured fields of `STRUCTURED`.

    It formats what the redactor already rewrote (the filter runs on the handler before formatting).
    """

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        for key in STRUCTURED:
            if isinstance(value := getattr(record, key, None), dict):
                line[key] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, default=str, ensure_ascii=False)


def default_format() -> LogFormat:
    """JSON where a collector reads stderr (a container, systemd), text on a terminal."""
    return "text" if sys.stderr.isatty() else "json"


def configure_logging(level: str = "INFO", log_format: LogFormat = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json"
                         else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    quiet_leaky_loggers()


HTTP_CLIENTS = ("httpx", "httpx2", "urllib3")
"""Their one line per request is shown at DEBUG only: a model call a second must not crowd out the turns. httpx2 is
the fork pydantic-ai's model clients use."""


def quiet_leaky_loggers() -> None:
    """Libraries that log what must not be logged: SQL parameters; slack_sdk whole request and response bodies,
    httpcore every header exchange. The HTTP clients' request lines (Telegram puts the token in the URL, which the
    redactor replaces) are shown only when the root logger is at DEBUG.
    """
    for name in ("httpcore", "httpcore2", "aiosqlite", "sqlalchemy.engine", "slack_sdk"):
        logging.getLogger(name).setLevel(logging.WARNING)
    debugging = logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    for name in HTTP_CLIENTS:
        logging.getLogger(name).setLevel(logging.DEBUG if debugging else logging.WARNING)
