"""`sandbox` (Files & shell): a workspace that persists between turns, on `pydantic-ai-backend`'s console tools.

Which workspace a run gets is decided by the server: `session_scope` picks one of the keys the gateway
computed for this run (`RunFacts.workspace.keys`), and the backend and connection are part of the key, so
changing either starts a fresh workspace and leaves the old one where it is. The tools come from
`create_console_toolset` inside our own capability (not `ConsoleCapability`, which ends the run on a
refused path), with the library's own approval switched off: only `execute` is side-effecting, and the
gateway's gate asks for it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from capabilities.registry import CapabilityDef, Deferred, ToolInfo
from capabilities.sandbox.facts import (
    DEFAULT_STATE_MAX_BYTES,
    SessionScope,
)

TOOLS = ("ls", "read_file", "glob", "grep", "write_file", "edit_file", "execute")


class SandboxConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    backend: Literal["state", "service"] = "state"
    """`state`: files in this database, capped, no shell; `service`: a sandbox connection an operator registered."""
    connection_id: str | None = None
    """A connection from gateway.yaml `sandboxes`; null takes the default one. `service` only."""
    session_scope: SessionScope = "conversation"
    """Who shares the workspace: `run` nobody, `conversation` one chat (a Slack thread is one), `channel` every
    thread of a room, `user` one person everywhere, `agent` everyone who talks to this agent."""
    runtime: str | None = None
    """A runtime alias the connection allows; `service` only."""
    include_execute: bool = True
    """Offer the shell at all; switched off, `execute` is removed rather than gated."""

    @model_validator(mode="after")
    def _service_only(self) -> SandboxConfig:
        for name in ("connection_id", "runtime"):
            if self.backend == "state" and getattr(self, name) is not None:
                raise ValueError(f"{name} applies to backend 'service' only; remove it, or set backend: service")
        return self


def offered(config: SandboxConfig) -> tuple[str, ...]:
    return TOOLS if config.include_execute else tuple(t for t in TOOLS if t != "execute")


CAPABILITY = CapabilityDef(
    id="sandbox", name="Files & shell", category="analysis", config=SandboxConfig,
    build=Deferred("capabilities.sandbox.build:build"), bind=Deferred("capabilities.sandbox.services:bind"),
    posts_files=True, offered=offered,
    scopes=frozenset({"sandbox:execute"}), on_run_end=Deferred("capabilities.sandbox.build:end_run"),
    description="A workspace of files that persists between turns, with a shell on a registered sandbox connection.",
    tools=(ToolInfo(id="ls", summary="Lists a folder of the workspace."),
           ToolInfo(id="read_file", summary="Reads a file, a slice at a time."),
           ToolInfo(id="glob", summary="Finds files by path pattern."),
           ToolInfo(id="grep", summary="Searches the files' text; credential and system files are left out."),
           ToolInfo(id="write_file", summary="Creates or replaces a file."),
           ToolInfo(id="edit_file", summary="Replaces an exact passage of a file."),
           ToolInfo(id="execute", summary="Runs a shell command in the workspace.", side_effecting=True)))
__all__ = ["CAPABILITY", "DEFAULT_STATE_MAX_BYTES", "SandboxConfig"]
