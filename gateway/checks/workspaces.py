"""What `gateway check` refuses about `sandbox` workspaces and the operator's `sandboxes` connections."""

from __future__ import annotations

from capabilities.workspace import SandboxConfig
from capabilities.workspace.shell import bubblewrap_missing
from gateway.checks.entries import entries_of
from gateway.config.schema import BubblewrapSandboxSpec, GatewayConfig


def sandbox_problems(config: GatewayConfig) -> list[str]:
    """A `service` workspace with no connection to run on, an unknown connection or runtime, a second
    default, and a bubblewrap connection on a host without bubblewrap; each by field, with the fix."""
    problems: list[str] = []
    defaults = [name for name, spec in config.sandboxes.items() if spec.default]
    if len(defaults) > 1:
        problems.append(f"sandboxes.{defaults[1]}.default: {defaults[0]!r} is already the default connection; "
                        "mark one only")
    for name, spec in config.sandboxes.items():
        missing = bubblewrap_missing() if isinstance(spec, BubblewrapSandboxSpec) else None
        if missing is not None:
            problems.append(f"sandboxes.{name}.kind: {missing}")
    for i, j, settings in entries_of(config, "sandbox", SandboxConfig):
        problems += _entry_problems(config, settings, f"agents[{i}].capabilities[{j}].config")
    return problems


def _entry_problems(config: GatewayConfig, settings: SandboxConfig, path: str) -> list[str]:
    if settings.backend != "service":
        return []
    names = ", ".join(sorted(config.sandboxes)) or "none defined"
    if not config.sandboxes:
        return [f"{path}.backend: 'service' needs a sandbox connection, and gateway.yaml defines no `sandboxes`; "
                "register one, or use backend: state"]
    name = settings.connection_id or config.default_sandbox()
    if name is None:
        return [f"{path}.connection_id: there are several sandboxes ({names}) and none is marked default; name one "
                "here or mark one `default: true`"]
    spec = config.sandboxes.get(name)
    if spec is None:
        return [f"{path}.connection_id: {name!r} is not one of the sandboxes ({names})"]
    if settings.runtime is None:
        return []
    allowed = [] if isinstance(spec, BubblewrapSandboxSpec) else spec.runtimes
    if settings.runtime not in allowed:
        return [f"{path}.runtime: {settings.runtime!r} is not a runtime sandbox {name!r} allows "
                f"({', '.join(allowed) or 'none: leave runtime out'})"]
    return []
