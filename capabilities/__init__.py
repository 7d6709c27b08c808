"""Agent capabilities: `capabilities.registry.offered` lists every capability this deployment offers, in one tuple.

`from capabilities import default_registry` reads it from there when first asked for, not when the package is
imported: a module of the package imported for one small thing (`config_errors` by the config schema) would
otherwise import every capability and the SDKs behind them, and `gateway --version` would take seconds.
"""

from __future__ import annotations

from typing import Any

OFFERED = frozenset({"CAPABILITIES", "default_registry"})
"""The names `capabilities.registry.offered` defines that the package has always offered."""


def __getattr__(name: str) -> Any:
    if name not in OFFERED:
        raise AttributeError(f"module 'capabilities' has no attribute {name!r}")
    from capabilities.registry import offered  # the whole catalog: only for who asks for it (see the module docstring)

    return getattr(offered, name)
