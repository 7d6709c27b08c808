"""What `tool_output_limits` binds when the gateway starts: where each run's spills are kept."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from capabilities.run import Deployment, SpillStore
from capabilities.tool_output_limits.spills import RunSpills


@dataclass(frozen=True, slots=True, kw_only=True)
class SpillServices:
    spills: Callable[[int], SpillStore]
    """The spill store of one run, by its id: a parked run's handles still read after the resume, anywhere."""


def bind(deployment: Deployment) -> SpillServices:
    return SpillServices(spills=lambda run_id: RunSpills(deployment.db, run_id))
