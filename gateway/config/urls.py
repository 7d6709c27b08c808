"""Server URLs an operator configures, checked before anything connects.

Self-hosted chat servers live behind VPNs, so private and loopback addresses are allowed on purpose.
Link-local addresses are refused: that is where cloud metadata services answer (169.254.169.254,
fd00:ec2::254), and a URL pointing there turns the gateway into a credential leak.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import SplitResult, urlsplit, urlunsplit

_METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data",
                             "instance-data.ec2.internal", "metadata.azure.internal"})
_METADATA_NETWORKS = (
    ipaddress.ip_network("169.254.0.0/16"),  # IPv4 link-local: AWS, GCP, Azure, OpenStack, ECS task metadata
    ipaddress.ip_network("fe80::/10"),  # IPv6 link-local
    ipaddress.ip_network("fd00:ec2::254/128"),  # AWS IMDS over IPv6
    ipaddress.ip_network("100.100.100.200/32"),  # Alibaba Cloud metadata
)
_LEGACY_IPV4 = re.compile(r"(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+)){0,3}")
"""Numeric host forms `getaddrinfo` also accepts: `2852039166`, `0xa9fea9fe`, `169.254.43518`."""


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
    if _is_metadata_host(parts.hostname):
        raise ValueError(f"{parts.hostname!r} is a link-local or cloud metadata address, never a chat server")
    return _normalized(parts)


def _normalized(parts: SplitResult) -> str:
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", ""))


def _is_metadata_host(hostname: str) -> bool:
    host = hostname.lower().rstrip(".")
    if host in _METADATA_NAMES:
        return True
    address = _as_address(host)
    if address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in _METADATA_NETWORKS)


def _as_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if not _LEGACY_IPV4.fullmatch(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None
