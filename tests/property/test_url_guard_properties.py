"""The URL guard's rule, over generated spellings: every spelling of an inside address is refused, as a URL host
and as what a name resolves to; an IPv6 form carrying a public IPv4 address is judged by that address, so each
decoding (mapped, compatible, SIIT, NAT64, 6to4, Teredo) has to be there for both halves to hold."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capabilities.run.url_guard import Refused, check_literal, checked_addresses, refused

INSIDE_V4 = [ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
    "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4",
    "240.0.0.0/4")]
INSIDE_V6 = [ipaddress.ip_network(n) for n in (
    "::1/128", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8", "2001:db8::/32", "100::/64")]
V6 = ipaddress.IPv6Address


def address_in(networks: list[ipaddress.IPv4Network] | list[ipaddress.IPv6Network]) -> st.SearchStrategy[str]:
    return st.sampled_from(networks).flatmap(lambda net: st.integers(0, net.num_addresses - 1).map(
        lambda offset: str(net.network_address + offset)))


inside_v4 = address_in(INSIDE_V4).map(ipaddress.IPv4Address)
public_v4 = st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address).filter(
    lambda a: a.is_global and not a.is_multicast and not a.is_reserved and str(a) != "168.63.129.16")


def mapped(v4: ipaddress.IPv4Address) -> V6:
    return V6(0xFFFF << 32 | int(v4))


def siit(v4: ipaddress.IPv4Address) -> V6:
    return V6(0xFFFF << 48 | int(v4))


def compatible(v4: ipaddress.IPv4Address) -> V6:
    return V6(int(v4))


def nat64(v4: ipaddress.IPv4Address) -> V6:
    return V6(int(V6("64:ff9b::")) | int(v4))


def nat64_local(v4: ipaddress.IPv4Address) -> V6:
    return V6(int(V6("64:ff9b:1::")) | int(v4))


def sixtofour(v4: ipaddress.IPv4Address) -> V6:
    return V6(0x2002 << 112 | int(v4) << 80 | 0x1234)


def teredo(v4: ipaddress.IPv4Address) -> V6:
    """Client `v4` behind the public Teredo server 65.54.227.120 (RFC 4380's example), obfuscated."""
    return V6(0x2001 << 112 | int(ipaddress.IPv4Address("65.54.227.120")) << 64 | 0x8000_63BF << 32
              | (int(v4) ^ 0xFFFFFFFF))


WRAPPERS: dict[str, Callable[[ipaddress.IPv4Address], V6]] = {
    "mapped": mapped, "siit": siit, "compatible": compatible, "nat64": nat64, "6to4": sixtofour, "teredo": teredo}


def ipv4_spellings(v4: ipaddress.IPv4Address) -> st.SearchStrategy[str]:
    """What `inet_aton` reads as `v4`: dotted, one number, two or three parts, each part decimal, octal or hex."""
    a, b, c, d = v4.packed
    n = int(v4)
    part_lists = [[a, b, c, d], [a, b, c << 8 | d], [a, b << 16 | c << 8 | d], [n]]

    def spelled(value: int, style: str) -> str:
        return {"dec": str(value), "oct": f"0{value:o}", "hex": f"0x{value:x}", "HEX": f"0X{value:X}"}[style]

    return st.tuples(st.sampled_from(part_lists), st.lists(st.sampled_from(["dec", "oct", "hex", "HEX"]),
                                                            min_size=4, max_size=4), st.booleans()).map(
        lambda t: ".".join(spelled(p, s) for p, s in zip(t[0], t[1], strict=False)) + ("." if t[2] else ""))


def ipv6_spellings(v6: V6) -> st.SearchStrategy[str]:
    """Compressed, exploded, upper case, a dotted-quad tail, a zone id, in brackets."""
    tail = f"{v6.exploded[:29]}:{ipaddress.IPv4Address(v6.packed[12:])}"
    return st.sampled_from([str(v6), v6.exploded, str(v6).upper(), tail, f"{v6}%25eth0", f"[{v6}]"])


def disguised(host: str) -> st.SearchStrategy[str]:
    """The host as written in a URL: plain, percent-encoded digits, fullwidth digits and dots."""
    percent = "".join(f"%{ord(c):02x}" if c.isdigit() else c for c in host)
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if c.isdigit() or c == "." else c for c in host)
    return st.sampled_from([host, percent, fullwidth])


inside_spellings = st.one_of(
    inside_v4.flatmap(ipv4_spellings),
    st.tuples(inside_v4, st.sampled_from(sorted(WRAPPERS))).flatmap(lambda t: ipv6_spellings(WRAPPERS[t[1]](t[0]))),
    address_in(INSIDE_V6).map(V6).flatmap(ipv6_spellings),
).flatmap(disguised)


@settings(max_examples=600, deadline=None)
@given(inside_spellings)
def test_every_spelling_of_an_inside_address_is_refused_as_a_host(host: str) -> None:
    with pytest.raises(Refused):
        check_literal(host)


@settings(max_examples=300, deadline=None)
@given(st.one_of(inside_v4.map(str), st.tuples(inside_v4, st.sampled_from(sorted(WRAPPERS))).map(
    lambda t: str(WRAPPERS[t[1]](t[0]))), address_in(INSIDE_V6)), st.lists(public_v4.map(str), max_size=2))
def test_a_name_resolving_to_an_inside_address_among_others_is_refused(inside: str, public: list[str]) -> None:
    async def resolver(_host: str) -> list[str]:
        return [*public, inside]

    with pytest.raises(Refused):
        asyncio.run(checked_addresses("site.example", resolver))


@settings(max_examples=300, deadline=None)
@given(public_v4, st.sampled_from(sorted(WRAPPERS)))
def test_an_ipv6_form_carrying_a_public_ipv4_address_is_judged_by_it(v4: ipaddress.IPv4Address, wrapper: str) -> None:
    assert not refused(WRAPPERS[wrapper](v4))
    assert refused(WRAPPERS[wrapper](ipaddress.IPv4Address("127.0.0.1")))


@settings(max_examples=200, deadline=None)
@given(inside_v4, st.sampled_from([(6, 7, 9, 10), (7, 9, 10, 11), (9, 10, 11, 12), (12, 13, 14, 15)]))
def test_nat64_local_use_is_refused_at_every_embedding_length(v4: ipaddress.IPv4Address,
                                                              offsets: tuple[int, ...]) -> None:
    packed = bytearray(V6("64:ff9b:1::").packed)
    for offset, byte in zip(offsets, v4.packed, strict=True):
        packed[offset] = byte
    assert refused(V6(bytes(packed)))


def test_nat64_local_use_carrying_a_public_address_at_every_length_is_fetched() -> None:
    assert not refused(V6("64:ff9b:1:808:8:808:808:808"))  # 8.8.8.8 at /48, /56, /64 and /96 at once


def test_a_teredo_address_through_an_inside_server_is_refused() -> None:
    assert refused(V6(int(teredo(ipaddress.IPv4Address("8.8.8.8"))) & ~(0xFFFFFFFF << 64) | 0x2001 << 112
                      | int(ipaddress.IPv4Address("10.0.0.1")) << 64))
