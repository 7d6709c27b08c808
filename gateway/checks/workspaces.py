"""What `gateway check` refuses about `sandbox` workspaces and the operator's `sandboxes` connections."""

from __future__ import annotations

from pathlib import Path

from capabilities.sandbox import SandboxConfig
from capabilities.sandbox.seal import bubblewrap_missing
from gateway.checks.entries import entries_of
from gateway.config.schema import BubblewrapSandboxSpec, GatewayConfig, Settings


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


def placement_problems(config: GatewayConfig, *, config_path: Path, settings: Settings) -> list[str]:
    """A bubblewrap connection's `directory` nested with the gateway's own files, either way round: inside
    it, or holding it. A sandbox mounts only one workspace's directory, so this is a second line: the files
    commands write never share a tree with the gateway's state, whatever the sandbox's view becomes."""
    guarded = _gateway_files(config_path, settings)
    problems: list[str] = []
    for name, spec in config.sandboxes.items():
        if not isinstance(spec, BubblewrapSandboxSpec):
            continue
        root = spec.directory.expanduser().resolve()
        for what, path in guarded:
            holder = path.parent
            if root == holder or holder.is_relative_to(root) or root.is_relative_to(holder):
                problems.append(f"sandboxes.{name}.directory: {root} and {what} ({path}) are nested; keep the "
                                f"workspaces in a directory of their own, outside {holder} (or move {what})")
    return problems


def _gateway_files(config_path: Path, settings: Settings) -> list[tuple[str, Path]]:
    """The files no workspace's directory may hold or lie beside: the SQLite database (DATABASE_URL), this
    config, and the secrets file (GATEWAY_SECRETS_FILE), each as an absolute path."""
    files = [("the config file", config_path)]
    database = sqlite_file(settings.database_url)
    if database is not None:
        files.append(("the SQLite database (DATABASE_URL)", database))
    if settings.secrets_file is not None:
        files.append(("the secrets file (GATEWAY_SECRETS_FILE)", settings.secrets_file))
    return [(what, path.expanduser().resolve()) for what, path in files]


def sqlite_file(url: str) -> Path | None:
    """The file a SQLite `DATABASE_URL` names (`sqlite:///gateway.db`, `sqlite+aiosqlite:////srv/gateway.db`), as
    SQLAlchemy's `make_url` reads it; None for another database or an in-memory one. Read here rather than by
    SQLAlchemy, whose import is half a second of `gateway check`."""
    scheme, separator, rest = url.partition("://")
    if not separator or scheme.split("+", 1)[0] != "sqlite":
        return None
    _, slash, database = rest.split("?", 1)[0].partition("/")
    return Path(database) if slash and database not in ("", ":memory:") else None
