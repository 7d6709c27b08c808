"""What `context` binds when the gateway starts: the config's context files (`context_files:`), read per run."""

from __future__ import annotations

from dataclasses import dataclass

from capabilities.context.files import ContextFiles
from capabilities.run import Deployment


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextServices:
    files: ContextFiles


def bind(deployment: Deployment) -> ContextServices:
    return ContextServices(files=ContextFiles(deployment.config.context_files))
