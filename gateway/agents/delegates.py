"""Builds a run's delegates through the same assembly as the agent a chat admitted.

A delegate runs on its own spec — its model, its capabilities, its approval gates (the bot binding's
per-tool modes still apply: it answers in that bot's chats) — plus whatever the delegating agent's
`share_with_delegates` lends it, one capability id at a time. `subagents` is never lent: whether a
delegate may delegate is its own spec's decision, bounded by the levels the tree above has left.
Delegates keep no conversation state (a delegate's plan lasts its own run) and every model response
they get is added to the run's usage.

A delegate named in `subagents` is built from the version its caller pinned when the caller was applied
(`BindingStore.apply`), not from its latest spec, and its own delegates from the versions *that* version
pinned: each author's decisions hold when somebody else calls them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.usage import RequestUsage, RunUsage

from capabilities.registry import BuildContext, BuiltDelegate, Registry
from gateway.agents.assembly import build_capabilities
from gateway.agents.bindings import AgentDefinition
from gateway.agents.models import ModelResolver
from gateway.config.schema import AgentSpec, CapabilityEntry


@dataclass(kw_only=True)
class GatewayDelegates:
    """`capabilities.registry.Delegates` for one delegating agent of one run."""

    parent: AgentSpec
    agents: Mapping[str, AgentSpec]
    """The delegating agent's delegates by name, each at its pinned version."""
    pins: Mapping[str, int] = field(default_factory=dict)
    """The delegating agent's pins (name → version), to find each delegate's own pins in `history`."""
    history: Mapping[tuple[str, int], AgentDefinition] | None = None
    """Every version reachable through the pins, by (name, version). None (a caller handing specs directly):
    every level of the tree reads the same `agents`."""
    registry: Registry
    models: ModelResolver
    binding_modes: Mapping[str, str]
    turn: BuildContext
    usage: RunUsage
    """The run's delegated usage, shared by every delegate of the tree."""
    depth_left: int | None = None
    ask_user: Callable[[str], Awaitable[str]] | None = None
    specialists: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The run's model-written specialists, for the agent a chat admitted: restored from a parked run, and
    added to by `create_agent`, so that a park carries them. A delegate's own delegation keeps none across."""
    pinned: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.pinned = tuple(name for name in self.parent.subagents if name in self.agents)

    @property
    def parent_model(self) -> str:
        return self.parent.model

    @property
    def model_names(self) -> frozenset[str]:
        return self.models.names

    def resolve_model(self, name: str) -> Any:
        return self.models.resolve(name)

    def agent_description(self, name: str) -> str | None:
        spec = self.agents.get(name)
        return None if spec is None else spec.description

    def charge(self, usage: RequestUsage) -> None:
        self.usage.requests += 1
        self.usage.incr(usage)

    def build_agent(self, name: str, *, depth_left: int, share: Sequence[str],
                    extra: Sequence[AbstractCapability[Any]]) -> BuiltDelegate:
        spec = self.agents[name]
        bound = {entry.id for entry in spec.capabilities}
        entries = [*spec.capabilities, *(entry for entry in self._lent(share) if entry.id not in bound)]
        child = replace(self, parent=spec, depth_left=depth_left, specialists={}, **self._pinned_below(name))
        return self._built(spec.name, spec.model, spec.instructions, entries, extra, delegates=child)

    def build_specialist(self, *, name: str, instructions: str, model: str, model_settings: Any = None,
                         share: Sequence[str], extra: Sequence[AbstractCapability[Any]]) -> BuiltDelegate:
        return self._built(name, model, instructions, list(self._lent(share)), extra, delegates=None,
                           model_settings=model_settings)

    def _pinned_below(self, name: str) -> dict[str, Any]:
        """What the delegate `name` delegates to: the versions its own pinned version pinned."""
        if self.history is None:
            return {}
        version = self.history.get((name, self.pins.get(name, 0)))
        pins = dict(version.pins) if version is not None else {}
        return {"pins": pins, "agents": {n: self.history[(n, v)].spec for n, v in pins.items()
                                         if (n, v) in self.history}}

    def _lent(self, share: Sequence[str]) -> list[CapabilityEntry]:
        """The delegating agent's own entries for the shared ids; `subagents` is dropped even from a spec
        stored before publishing refused it, so sharing can never widen a delegate."""
        return [entry for entry in self.parent.capabilities
                if entry.id in share and entry.id != "subagents" and entry.enabled]

    def _built(self, name: str, model: str, instructions: str, entries: list[CapabilityEntry],
               extra: Sequence[AbstractCapability[Any]], *, delegates: GatewayDelegates | None,
               model_settings: Any = None) -> BuiltDelegate:
        turn = replace(self.turn, state=None, resuming=False, delegates=delegates)
        built, policy = build_capabilities(entries, registry=self.registry, turn=turn, binding_modes=self.binding_modes)
        agent: Agent[Any, str | DeferredToolRequests] = Agent(
            self.models.resolve(model), output_type=[str, DeferredToolRequests], name=name,
            instructions=instructions or None, model_settings=model_settings, capabilities=[*built, policy, *extra])
        return BuiltDelegate(agent=agent, stable_id=policy.stable_id)
