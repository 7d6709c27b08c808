"""The capability entries a check looks into: one capability's, with their configs validated."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from gateway.config.schema import GatewayConfig

C = TypeVar("C", bound=BaseModel)


def entries_of(config: GatewayConfig, capability: str, schema: type[C]) -> Iterator[tuple[int, int, C]]:
    """`(agent index, entry index, config)` for each entry of `capability` in the agents' specs; an entry whose
    config does not validate is left out, since the registry reports it on its own."""
    for i, agent in enumerate(config.agents):
        for j, entry in enumerate(agent.capabilities):
            if entry.id != capability:
                continue
            try:
                yield i, j, schema.model_validate(entry.config)
            except ValidationError:
                continue
