"""What the gateway decides and wires for a run's workspace (`sandbox`): plain data and one store protocol.

Kept apart from `capabilities/sandbox/` so that `capabilities/run/` can type `RunFacts.workspace`
without importing the capability. Every value here is decided server-side: which workspace key each
`session_scope` maps to, which sandbox connections an operator registered, how large a stored workspace
may grow. The model chooses none of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import SecretStr

from capabilities.run import Upload

SessionScope = Literal["run", "conversation", "channel", "user", "agent"]
SESSION_SCOPES: tuple[SessionScope, ...] = ("run", "conversation", "channel", "user", "agent")

DEFAULT_STATE_MAX_BYTES = 10 * 2**20
"""`SANDBOX_STATE_MAX_BYTES` when unset: a stored (`state`) workspace holds at most this much file content."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredWorkspace:
    """A `state` workspace as it is kept between runs: `pydantic-ai-backend`'s `StateBackend` document."""

    files: dict[str, Any]
    """`StateBackend.files`: file data by absolute path."""
    directories: tuple[str, ...] = ()


class WorkspaceDocuments(Protocol):
    """The `state` workspaces of this deployment, one document per workspace key (`capabilities/sandbox/store.py`)."""

    async def load(self, key: str) -> StoredWorkspace | None: ...

    async def save(self, key: str, *, label: str, changed: Mapping[str, Any | None],
                   directories: Sequence[str]) -> None:
        """Apply one run's changes on top of what is stored now: a file per path, None for a removed one.

        Only what this run changed is written, so two runs sharing a workspace lose nothing of each other's
        but a file both changed (the later one wins)."""
        ...

    async def delete(self, key: str) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class BubblewrapConnection:
    """A shell on this host, each workspace a directory under `root`, every command inside bubblewrap."""

    name: str
    root: Path
    """Where the workspaces' directories live; the gateway's user must own it. A sandbox never mounts it, only
    one workspace's directory inside it."""
    network: bool = False
    """Share this host's network with commands (loopback included); off, they reach no socket at all."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxServiceConnection:
    """A `sandboxd` service (pydantic-ai-backend's) that an operator runs next to Docker or in front of Daytona."""

    name: str
    url: str
    token: SecretStr = field(repr=False)
    runtimes: tuple[str, ...] = ()
    """The runtime aliases a spec may name here; empty: only the service's default."""


SandboxConnection = BubblewrapConnection | SandboxServiceConnection


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceFacts:
    """What `sandbox` needs from the gateway for one run."""

    keys: Mapping[SessionScope, str]
    """The workspace each `session_scope` means for this run (`run` the run's id, `conversation` the chat or
    Slack thread, `channel` the room, `user` the linked person or the identity, `agent` the whole agent)."""
    scope: SessionScope | None = None
    """The bot binding's `sandbox_scope`, which overrides the spec's `session_scope` in that bot's chats."""
    documents: WorkspaceDocuments | None = None
    """Where `state` workspaces are kept; None: in memory for this run only (a delegate, a test)."""
    connections: Mapping[str, SandboxConnection] = field(default_factory=dict[str, SandboxConnection])
    default_connection: str | None = None
    """What `connection_id: null` means; None when the operator registered no connection."""
    state_max_bytes: int = DEFAULT_STATE_MAX_BYTES
    uploads: Sequence[Upload] = ()
    """Attachments of the admitting message, placed under `uploads/`; filled by the files branch's intake."""
    skills: Mapping[str, Mapping[str, bytes]] = field(default_factory=dict[str, Mapping[str, bytes]])
    """Skills bound to the agent, by name: relative path → content (`SKILL.md` and its resources), placed under
    `skills/<name>/`; filled where the skills capability resolves an agent's skill folders."""
    opened: dict[str, Any] = field(default_factory=dict[str, Any], compare=False)
    """The `state` workspaces this run has open, by key: one copy per run, so a delegate the workspace is lent
    to (`share_with_delegates: [sandbox]`) reads what the agent wrote a moment ago, and the other way round."""
