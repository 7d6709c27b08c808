"""The one guard on every address an outbound fetch the model can cause would reach.

`web_fetch` (each redirect hop), the MCP servers' HTTP clients and the browser's `cdp_url` all ask here. A host
is read the way a resolver would read it (percent-decoded, IDNA-folded, the legacy IPv4 spellings `inet_aton`
accepts: `2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`), a name is resolved once, and every address it
resolves to is checked; `capabilities/run/guarded_http.py` then connects to one of the checked addresses, so there
is no second lookup for a rebinding name to answer differently.

An IPv6 address that carries an IPv4 one is judged by the IPv4 one it leads to: IPv4-mapped (`::ffff:0:0/96`),
IPv4-compatible (`::/96`), SIIT (`::ffff:0:0:0/96`, RFC 6145), NAT64 (`64:ff9b::/96`, RFC 6052, and the local-use
`64:ff9b:1::/48`, RFC 8215, at each of its embedding lengths), 6to4 (`2002::/16`, RFC 3056) and Teredo
(`2001::/32`, RFC 4380: the server and the obfuscated client). So `64:ff9b::127.0.0.1` is refused on a host with
a NAT64 in front of it, and `64:ff9b::8.8.8.8` is a public site there. Any other address is refused when Python's
`ipaddress` flags it: private, loopback, link-local, multicast, reserved, unspecified, site-local, or not global.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable
from urllib.parse import unquote, urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str], Awaitable[list[str]]]
"""Every address a name resolves to; empty (or OSError) when it resolves to none."""

REFUSAL = ("it points at a private, loopback, link-local, reserved or cloud-metadata address, which this "
           "deployment never fetches")
_LEGACY_IPV4 = re.compile(r"(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}\.?", re.IGNORECASE)
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": ".", "\u2024": ".", "\ufe52": "."})
_METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data",
                             "instance-data.ec2.internal", "metadata.azure.internal"})
_PUBLIC_METADATA = frozenset({ipaddress.ip_address("168.63.129.16")})
"""Azure's WireServer answers on a public address; every other metadata service sits in a refused range."""
_METADATA = _PUBLIC_METADATA | {ipaddress.ip_address(a) for a in (
    "100.100.100.200", "192.0.0.192", "fd00:ec2::254", "fd00:ec2::23", "fd20:ce::254", "fd00:42::42")}
"""Metadata services outside the link-local ranges: Alibaba, Oracle Classic, AWS and GCP over IPv6, Scaleway."""
_PROTOCOL_ASSIGNMENTS = ipaddress.ip_network("192.0.0.0/24")
"""RFC 6890's IETF protocol assignments (Oracle Cloud's metadata at .192 among them), of which `ipaddress` flags
only some as not global."""

_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
_SIIT = ipaddress.ip_network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.ip_network("::/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_SIXTOFOUR = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")
_LOW32 = (12, 13, 14, 15)
_NAT64_LOCAL_OFFSETS = ((6, 7, 9, 10), (7, 9, 10, 11), (9, 10, 11, 12), _LOW32)
"""RFC 6052 section 2.2: where a /48, /56, /64 and /96 prefix puts the IPv4 address (byte 8 is skipped)."""


class Refused(ValueError):
    """The host leads somewhere this deployment never fetches; the message names the host as written, never an
    address a name resolved to."""


def _at(packed: bytes, offsets: Iterable[int]) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(bytes(packed[i] for i in offsets))


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address] | None:
    """The IPv4 addresses a transition form leads to (all of them must be public), or None for a plain IPv6 one."""
    packed = address.packed
    if address in _MAPPED or address in _SIIT or address in _NAT64:
        return [_at(packed, _LOW32)]
    if address in _NAT64_LOCAL:
        return [_at(packed, offsets) for offsets in _NAT64_LOCAL_OFFSETS]
    if address in _COMPATIBLE and int(address) > 1:
        return [_at(packed, _LOW32)]
    if address in _SIXTOFOUR:
        return [_at(packed, (2, 3, 4, 5))]
    if address in _TEREDO:
        client = ipaddress.IPv4Address(int.from_bytes(packed[12:16], "big") ^ 0xFFFFFFFF)
        return [_at(packed, (4, 5, 6, 7)), client]
    return None


def _flagged(address: Address) -> bool:
    return (address.is_private or address.is_loopback or address.is_link_local or address.is_multicast
            or address.is_reserved or address.is_unspecified or not address.is_global or address in _PUBLIC_METADATA
            or address in _PROTOCOL_ASSIGNMENTS
            or (isinstance(address, ipaddress.IPv6Address) and address.is_site_local))


def refused(address: Address) -> bool:
    """Whether a connection to `address` could reach something inside: the rule of this module."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = embedded_ipv4(address)
        if carried is not None:
            return any(_flagged(ipv4) for ipv4 in carried)
    return _flagged(address)


def is_metadata(address: Address) -> bool:
    """A cloud metadata service's address, in any spelling (refused even where an operator allows private ones)."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = embedded_ipv4(address)
        if carried is not None:
            return any(is_metadata(ipv4) for ipv4 in carried)
    return address.is_link_local or address in _METADATA


def names_metadata(host: str) -> bool:
    """Whether `host` names a cloud metadata service, by name or by any spelling of its address, without DNS."""
    try:
        address = literal_address(host)
        return canonical_host(host) in _METADATA_NAMES or (address is not None and is_metadata(address))
    except Refused:
        return False


def canonical_host(host: str) -> str:
    """`host` as a resolver reads it: percent-decoded, IDNA-folded (fullwidth digits and dots included), lower
    case, without brackets or the root dot. A zone id (`%eth0`) stays, for `literal_address` to drop."""
    name = unquote(host).strip().strip("[]").translate(_DOTS).lower()
    if not name.isascii():
        try:
            name = name.encode("idna").decode("ascii").lower()
        except UnicodeError:
            raise Refused(f"{host!r} is not a hostname a resolver could look up") from None
    return name[:-1] if name.endswith(".") and not name.endswith("..") else name


def literal_address(host: str) -> Address | None:
    """The address a host names without DNS: an IP literal, or a legacy IPv4 spelling `inet_aton` accepts."""
    name = canonical_host(host)
    try:
        return ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        pass
    if not _LEGACY_IPV4.fullmatch(name):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(name.rstrip(".")))
    except OSError:
        # A numeric spelling `inet_aton` refuses (`0x` alone, `08`, an overflow) is not a name either.
        raise Refused(f"{host!r} is neither an address nor a name") from None


async def system_resolver(host: str) -> list[str]:
    """The host's own resolver (getaddrinfo), off the event loop."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def checked_addresses(host: str, resolver: Resolver, *, trusted: bool = False) -> list[Address]:
    """Every address `host` leads to, each checked; raises `Refused` if any one is refused.

    `trusted`: a host an operator configured (an MCP server on the local network); only cloud metadata is refused.
    """
    if names_metadata(host):
        raise Refused(f"{host!r} names a cloud metadata service")
    name = canonical_host(host)
    literal = literal_address(name)
    if literal is not None:
        found: list[Address] = [literal]
    else:
        try:
            found = [ipaddress.ip_address(text.split("%", 1)[0]) for text in await resolver(name)]
        except OSError as exc:
            raise OSError(f"{host!r} does not resolve") from exc
        if not found:
            raise OSError(f"{host!r} does not resolve")
    rule = is_metadata if trusted else refused
    if any(rule(address) for address in found):
        raise Refused(f"{host!r}: {REFUSAL}")
    return found


def check_literal(host: str, *, allow_private: bool = False) -> None:
    """Refuses a host that names a refused address without DNS (a literal, a legacy spelling, a metadata name)
    before any client parses it its own way; names are checked where the connection opens."""
    if names_metadata(host):
        raise Refused(f"{host!r} names a cloud metadata service")
    literal = literal_address(host)
    if literal is not None and not allow_private and refused(literal):
        raise Refused(f"{host!r}: {REFUSAL}")


def url_host(url: str) -> str:
    """The host of an http(s) URL, for the domain filters; `ValueError` for any other URL. The host's addresses
    are checked where the connection opens."""
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError("only http:// and https:// URLs can be fetched")
    if not parts.hostname:
        raise ValueError("the URL names no host")
    return parts.hostname
