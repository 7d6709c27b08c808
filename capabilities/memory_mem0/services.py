"""What `memory_mem0` binds when the gateway starts: the deployment's mem0 settings (its name for `user_id`s, the
hosts a key may go to, the CAs to trust), from `Settings.mem0_access`."""

from __future__ import annotations

from dataclasses import dataclass

from capabilities.memory_mem0.access import Mem0Access
from capabilities.run import Deployment


@dataclass(frozen=True, slots=True, kw_only=True)
class Mem0Services:
    access: Mem0Access


def bind(deployment: Deployment) -> Mem0Services:
    return Mem0Services(access=deployment.settings.mem0_access)
