"""Server URLs an operator configures, checked before anything connects.

Self-hosted chat servers live behind VPNs, so private and loopback addresses are allowed on purpose.
Link-local and cloud metadata addresses are refused, in any spelling the URL guard
(`capabilities/run/url_guard.py`) reads: that is where cloud metadata services answer (169.254.169.254,
fd00:ec2::254), and a URL pointing there turns the gateway into a credential leak.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit, urlunsplit

from capabilities.run.url_guard import names_metadata


def check_server_url(value: str, *, example: str = "https://chat.example.org") -> str:
    """The URL normalized (no trailing slash); raises `ValueError` saying what is wrong and the fix.

    The message never repeats the value, which may carry credentials.
    """
    parts = urlsplit(value.strip())
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"must start with http:// or https://, e.g. {example}")
    if "@" in parts.netloc:
        raise ValueError(f"must not carry credentials (user:pass@); give the bare server URL, e.g. {example}")
    if not parts.hostname:
        raise ValueError(f"names no host, e.g. {example}")
    if parts.query or parts.fragment:
        raise ValueError(f"must not have a query or fragment, e.g. {example}")
    try:
        parts.port  # noqa: B018 - reading it validates it
    except ValueError:
        raise ValueError(f"has a port that is not a number from 1 to 65535, e.g. {example}:8065") from None
    if names_metadata(parts.hostname):
        raise ValueError(f"{parts.hostname!r} is a link-local or cloud metadata address, never a chat server")
    return _normalized(parts)


def _normalized(parts: SplitResult) -> str:
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", ""))
