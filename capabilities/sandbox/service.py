"""The `service` backend: a session on a `sandboxd` service an operator registered (pydantic-ai-backend).

The service owns the containers: image, mounts, network mode and ceilings are its configuration, and a
spec names at most a runtime alias the connection allows. Each workspace is one named session, so every
run of the same scope attaches to the same files for as long as the service keeps them.
"""

from __future__ import annotations

import hashlib

from pydantic_ai.workspaces import Workspace
from pydantic_ai_backends.workspaces import SandboxdWorkspaceBackend

from capabilities.sandbox.facts import SandboxServiceConnection


def session_name(key: str) -> str:
    """The service's session id for the workspace `key` (the service accepts 64 characters of a small alphabet)."""
    return "gw-" + hashlib.sha256(key.encode()).hexdigest()[:40]


def service_backend(connection: SandboxServiceConnection, key: str, *, runtime: str | None,
                    tenant: str) -> SandboxdWorkspaceBackend:
    """The session itself; beyond what a `Workspace` offers it can be purged (`forget`)."""
    return SandboxdWorkspaceBackend(connection.url, token=connection.token.get_secret_value(),
                                    provider=f"sandboxd:{connection.name}", runtime=runtime, tenant=tenant,
                                    session_name=session_name(key))


def service_workspace(connection: SandboxServiceConnection, key: str, *, runtime: str | None,
                      tenant: str) -> Workspace:
    return Workspace(service_backend(connection, key, runtime=runtime, tenant=tenant))
