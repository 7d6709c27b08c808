"""What `sandbox` binds when the gateway starts: the operator's sandbox connections (`sandboxes:`, each service
token resolved and handed to the log redactor), where `state` workspaces are kept, and the skill folders it lays
out as files."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import SecretStr

from capabilities.run import Deployment, ServiceMissing, SkillFolder
from capabilities.sandbox.facts import (
    DEFAULT_STATE_MAX_BYTES,
    BubblewrapConnection,
    SandboxConnection,
    SandboxServiceConnection,
    WorkspaceDocuments,
)
from capabilities.sandbox.store import StoredWorkspaces

REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceWiring:
    """What the deployment gives every run's workspace: the operator's sandbox connections and the `state` cap."""

    connections: Mapping[str, SandboxConnection] = field(default_factory=dict[str, SandboxConnection])
    default_connection: str | None = None
    state_max_bytes: int = DEFAULT_STATE_MAX_BYTES


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxServices:
    documents: WorkspaceDocuments | None
    """Where `state` workspaces are kept; None: in memory for each run only."""
    wiring: WorkspaceWiring = WorkspaceWiring()
    skill_folders: Mapping[str, SkillFolder] = field(default_factory=dict[str, SkillFolder])


def bind(deployment: Deployment) -> SandboxServices:
    config = deployment.config
    return SandboxServices(documents=StoredWorkspaces(deployment.db), wiring=wiring(deployment),
                           skill_folders={spec.name: SkillFolder(name=spec.name, path=spec.path)
                                          for spec in config.skill_folders})


def wiring(deployment: Deployment) -> WorkspaceWiring:
    """The operator's `sandboxes` as connections, each service token resolved (and handed to the log redactor, so
    it never reaches a log line)."""
    connections: dict[str, SandboxConnection] = {}
    for name, spec in deployment.config.sandboxes.items():
        if spec.kind == "bubblewrap":
            connections[name] = BubblewrapConnection(name=name, root=spec.directory, network=spec.network)
            continue
        token = _token(deployment, spec.token, f"sandboxes.{name}.token")
        deployment.redact(token.get_secret_value())
        connections[name] = SandboxServiceConnection(name=name, url=spec.url, token=token,
                                                     runtimes=tuple(spec.runtimes))
    return WorkspaceWiring(connections=connections, default_connection=deployment.config.default_sandbox(),
                           state_max_bytes=deployment.settings.sandbox_state_max_bytes)


def _token(deployment: Deployment, reference: str, where: str) -> SecretStr:
    found = REFERENCE.match(reference)
    value = deployment.secrets.get(found.group(1)) if found else None
    if not value:
        raise ServiceMissing("sandbox", f"the token {where} names ({reference})",
                             "set it in the environment or the secrets file")
    return SecretStr(value)
