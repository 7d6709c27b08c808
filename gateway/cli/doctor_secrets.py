"""Every secret `gateway doctor` could print, and the scrubber each of its lines passes through.

Doctor output is what people paste into issues, and the answers it quotes are not ours: Telegram's refusal
echoes the token, an OpenAI 401 shows the key's first characters, a driver's error may carry the URL with its
password. So the scrubber replaces each secret whole, and then any run of `FRAGMENT` characters that also occurs
in a secret, which catches the shortened and masked forms (`123456:SECRET…`, `sk-abc****wxyz`).
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from gateway.config.schema import Settings
from gateway.config.secrets import SecretSource

FRAGMENT = 6
"""The shortest piece of a secret that is scrubbed on its own: long enough that a random token's piece does not
turn up in ordinary words, short enough to catch a token cut after its first characters."""
SHORTEST = 4
"""Values shorter than this are not scrubbed: a 3-letter "password" would blank out every word holding it."""
MASK = "***"
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TELEGRAM_TOKEN = re.compile(r"^\d+:([A-Za-z0-9_-]{20,})$")
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)


class Scrubber:
    """Replaces known secret values, and their fragments, in any text."""

    def __init__(self, secrets: Iterable[str]) -> None:
        values = sorted({value for value in secrets if len(value) >= SHORTEST}, key=len, reverse=True)
        self._whole = re.compile("|".join(map(re.escape, values))) if values else None
        self._pieces = {piece[i:i + FRAGMENT] for piece in map(_private_part, values) if len(piece) > FRAGMENT
                        for i in range(len(piece) - FRAGMENT + 1)}

    def __call__(self, text: str) -> str:
        if self._whole is None:
            return text
        text = self._whole.sub(MASK, text)
        covered = bytearray(len(text))
        for start in range(len(text) - FRAGMENT + 1):
            if text[start:start + FRAGMENT] in self._pieces:
                covered[start:start + FRAGMENT] = b"\x01" * FRAGMENT
        return _masked(text, covered) if any(covered) else text


def _private_part(value: str) -> str:
    """What of `value` is secret piece by piece: a Telegram token's part after the colon, since the part before it
    is the bot's public user id, which getMe prints; all of any other value."""
    matched = _TELEGRAM_TOKEN.match(value)
    return matched.group(1) if matched else value


def _masked(text: str, covered: bytearray) -> str:
    """`text` with each run of covered characters replaced by one mask."""
    kept: list[str] = []
    for index, char in enumerate(text):
        if not covered[index]:
            kept.append(char)
        elif index == 0 or not covered[index - 1]:
            kept.append(MASK)
    return "".join(kept)


def known_secrets(config_path: Path, secrets: SecretSource, settings: Settings) -> list[str]:
    """Every value this deployment treats as secret: the secrets file, each `${VAR}` the config names, the
    environment's keys, tokens and passwords (the providers' own `OPENAI_API_KEY`, …), and the passwords in the
    database and Redis URLs."""
    found = list(secrets.file_values.values())
    text = config_path.read_text(encoding="utf-8", errors="replace") if config_path.is_file() else ""
    found += [value for name in _REFERENCE.findall(text) if (value := secrets.get(name))]
    found += [value for name, value in secrets.environ.items() if _SECRET_NAME.search(name)]
    for url in (settings.database_url, settings.redis_url):
        password = urlsplit(url).password if url else None
        if password:
            found.append(password)
    return found


class ScrubbedLogs(logging.Filter):
    """Scrubs what libraries log while the doctor runs, the way its own lines are scrubbed."""

    def __init__(self, scrub: Scrubber) -> None:
        super().__init__("doctor-secrets")
        self._scrub = scrub

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = self._scrub(record.getMessage()), None
        if record.exc_info:
            record.exc_text = self._scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


@contextmanager
def scrubbed_logging(scrub: Scrubber) -> Iterator[None]:
    """While the block runs, what libraries log or warn reaches stderr scrubbed, at WARNING and above."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.addFilter(ScrubbedLogs(scrub))
    root = logging.getLogger()
    root.addHandler(handler)
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)
        root.removeHandler(handler)
