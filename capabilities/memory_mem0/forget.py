"""Forgetting a person in mem0 too: nothing of `memory_mem0` is stored here, so deleting reaches mem0's API.

`forget yes` in a DM and `gateway memory delete` delete every owner's memories under every agent that binds
`memory_mem0` (enabled or not: what it remembered while enabled is still there), each through that
entry's own service and key. A service that cannot be reached is reported by agent, never silently skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr, ValidationError
from sqlalchemy import Connection

from capabilities.memory_mem0 import Mem0Config, user_id
from capabilities.memory_mem0.access import Mem0Access, Mem0Refused, Mem0Unavailable, endpoint
from capabilities.memory_mem0.client import Mem0Client
from capabilities.run import Deleted, Deployment, Held, MemoryOwner

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class Mem0Binding:
    agent: str
    config: Mem0Config
    key: SecretStr | None = field(repr=False)
    """None: the entry's secret is not in this process's environment or secrets file."""


def mem0_bindings(agents: Iterable[tuple[str, Sequence[Mapping[str, Any]]]],
                  secret: Callable[[str], str | None]) -> list[Mem0Binding]:
    """Every `memory_mem0` entry of these agents (name, `capabilities[]` as dicts), with its key looked up."""
    found: list[Mem0Binding] = []
    for agent, entries in agents:
        for entry in entries:
            if entry.get("id") != "memory_mem0":
                continue
            try:
                config = Mem0Config.model_validate(entry.get("config") or {})
            except ValidationError:
                log.warning("agent %r: its memory_mem0 config is invalid; its mem0 memories cannot be deleted", agent)
                continue
            secret_id = entry.get("secret_id")
            value = secret(secret_id) if secret_id else None
            found.append(Mem0Binding(agent=agent, config=config, key=SecretStr(value) if value else None))
    return found


FORGET_MEM0 = ("This also deletes what agents {agents} remember about you in their memory service (mem0), which "
               "this gateway cannot count.")
UNREACHED = "the memory service (mem0) of agent(s) {agents}"


class Mem0Forgetting:
    """`capabilities.run.PersonalStore` through mem0's API: nothing of it is stored in this database."""

    def __init__(self, bindings: Sequence[Mem0Binding], access: Mem0Access) -> None:
        self._bindings = list(bindings)
        self._access = access

    async def held(self, owners: Sequence[MemoryOwner]) -> Held:
        agents = ", ".join(binding.agent for binding in self._bindings)
        return Held(uncounted=FORGET_MEM0.format(agents=agents) if agents else "")

    async def delete(self, owners: Sequence[MemoryOwner]) -> Deleted:
        """Delete these owners' memories for every binding agent; each agent where that failed is named."""
        failed: list[tuple[str, str]] = []
        for binding in self._bindings:
            problem = await self._forget_one(binding, owners)
            if problem is not None:
                log.warning("mem0 memories of agent %r were not deleted: %s", binding.agent, problem)
                failed.append((binding.agent, problem))
        return Deleted(unreached=UNREACHED.format(agents=", ".join(agent for agent, _ in failed)) if failed else "",
                       problems=tuple(f"mem0 memories of agent {agent} not deleted ({problem})"
                                      for agent, problem in failed))

    async def clear(self, agent_name: str) -> Deleted:
        """Nothing: mem0 keeps an agent's memories under one `user_id` per owner, which this gateway does not list."""
        return Deleted()

    def move(self, connection: Connection, source: MemoryOwner, target: MemoryOwner) -> None:
        """Nothing: the memories stay in mem0 under the `user_id` they were written for, which `forget` still
        reaches through the person's linked identities."""

    async def _forget_one(self, binding: Mem0Binding, owners: Sequence[MemoryOwner]) -> str | None:
        if binding.key is None:
            return "its mem0 key is not set in this process's environment"
        try:
            client = Mem0Client(base_url=endpoint(binding.config.base_url, self._access),
                                dialect=binding.config.speaks, key=binding.key, ca_file=self._access.ca_file,
                                timeout=binding.config.timeout)
            for owner in owners:
                await client.forget(user_id(self._access.deployment, binding.agent, owner))
        except (Mem0Refused, Mem0Unavailable) as exc:
            return str(exc)
        return None


def personal_store(deployment: Deployment) -> Mem0Forgetting:
    """Every agent of the deployment's config binding `memory_mem0` (enabled or not), with its key, which is
    registered with the log redactor here: no log line may carry one."""
    agents = [(agent.name, [entry.model_dump() for entry in agent.capabilities]) for agent in deployment.config.agents]
    bindings = mem0_bindings(agents, deployment.secrets.get)
    for binding in bindings:
        if binding.key is not None:
            deployment.redact(binding.key.get_secret_value())
    return Mem0Forgetting(bindings, deployment.settings.mem0_access)
