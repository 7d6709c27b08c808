"""What `gateway check` refuses about paths: a relative one names a different place for each directory the gateway
is started from (a shell, a service unit, a container), so every path in gateway.yaml is absolute."""

from __future__ import annotations

from pathlib import PurePath

from capabilities.subagents import SubagentsConfig
from gateway.checks.entries import entries_of
from gateway.config.schema import BubblewrapSandboxSpec, GatewayConfig


def relative_path_problems(config: GatewayConfig) -> list[str]:
    """Each path setting that is relative: context files, skill folders, bubblewrap directories, agent folders."""
    paths: list[tuple[str, str]] = [(f"context_files[{i}].path", spec.path)
                                    for i, spec in enumerate(config.context_files) if spec.path is not None]
    paths += [(f"skill_folders[{i}].path", spec.path) for i, spec in enumerate(config.skill_folders)]
    paths += [(f"sandboxes.{name}.directory", str(spec.directory)) for name, spec in config.sandboxes.items()
              if isinstance(spec, BubblewrapSandboxSpec)]
    for i, j, settings in entries_of(config, "subagents", SubagentsConfig):
        paths += [(f"agents[{i}].capabilities[{j}].config.agent_folders[{k}]", folder)
                  for k, folder in enumerate(settings.agent_folders)]
    return [f"{field}: {path!r} is relative, so it would name a different place for each directory the gateway "
            "is started from; write the absolute path (e.g. /srv/gateway/…)" for field, path in paths
            if not PurePath(path).is_absolute()]
