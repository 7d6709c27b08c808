"""A platform that answered and refused a call (a channel not found, a bot no longer a member, a message too long)
told apart from a bug of ours: a known outcome, worth one line with the platform's own words, not a traceback.

Each SDK's error class is looked up among the loaded modules rather than imported: an error can only be one of an
SDK's classes once that SDK is loaded, and a gateway of Telegram bots does not load Slack's stack to ask.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any


def refusal(exc: BaseException) -> str | None:
    """`slack: channel_not_found`, `telegram: Forbidden: bot was kicked …`, `mattermost: HTTP 403 …` when `exc`
    (or what it wraps) is a platform's refusal of a call: an answer other than a 429 or a 5xx. None otherwise."""
    for cause in _causes(exc):
        said = _slack(cause) or _telegram(cause) or _mattermost(cause)
        if said is not None:
            return said
    return None


def _slack(exc: BaseException) -> str | None:
    error_class = _loaded("slack_sdk.errors", "SlackApiError")
    if error_class is None or not isinstance(exc, error_class):
        return None
    response: Any = getattr(exc, "response", None)  # SlackApiError's, found by name: see the module's docstring
    if _passing(getattr(response, "status_code", None)):
        return None
    return f"slack: {response.get('error') or 'refused'}"


def _telegram(exc: BaseException) -> str | None:
    refused = tuple(kind for name in ("BadRequest", "Forbidden") if (kind := _loaded("telegram.error", name)))
    if not refused or not isinstance(exc, refused):
        return None
    return f"telegram: {exc}"


_DRIVER_REFUSALS = ("InvalidOrMissingParameters", "NoAccessTokenProvided", "NotEnoughPermissions",
                    "ResourceNotFound", "MethodNotAllowed", "ContentTooLarge")
"""mattermostdriver's 4xx classes, raised without the response (`adapters/mattermost/rest.py`)."""


def _mattermost(exc: BaseException) -> str | None:
    driver = tuple(kind for name in _DRIVER_REFUSALS if (kind := _loaded("mattermostdriver.exceptions", name)))
    first_line = str(exc).splitlines()[0][:160] if str(exc) else ""
    if driver and isinstance(exc, driver):
        return f"mattermost: {type(exc).__name__} {first_line}".rstrip()
    error_class = _loaded("requests", "HTTPError")
    if error_class is None or not isinstance(exc, error_class):
        return None
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status is None or _passing(status):
        return None
    return f"mattermost: HTTP {status} {first_line}".rstrip()


def _passing(status: int | None) -> bool:
    """A 429 or a 5xx: the platform did not refuse the call, it could not take it now."""
    return status is not None and (status == 429 or status >= 500)


def _loaded(module: str, name: str) -> type[BaseException] | None:
    loaded = sys.modules.get(module)
    found = getattr(loaded, name, None) if loaded is not None else None
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
