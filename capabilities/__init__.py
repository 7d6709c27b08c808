"""Agent capabilities: the registry lists every capability this deployment offers, in one tuple."""

from __future__ import annotations

from capabilities import clock
from capabilities.registry import CapabilityDef, Registry

CAPABILITIES: tuple[CapabilityDef, ...] = (clock.CAPABILITY,)


def default_registry() -> Registry:
    return Registry(CAPABILITIES)
