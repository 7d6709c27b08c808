"""A question the agent or a delegate put to this person here is answered by their next message (a voice note: its
transcript), not a new turn: the parked run it belongs to resumes. Only where the agent binds a capability that asks
in the chat (`asks_in_chat`) can such a question be open, so elsewhere this step reads nothing, and a deployment that
binds no such capability leaves the step out."""

from __future__ import annotations

from sqlalchemy import Connection

from capabilities.registry import Registry
from gateway.agents.bindings import Binding
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Delivery, Handled, refuse
from gateway.pipeline.voice import spoken


def delegate_answer(services: StepServices) -> DelegateAnswer | None:
    return DelegateAnswer(services) if services.capabilities.asks_in_chat else None


class DelegateAnswer:
    def __init__(self, services: StepServices) -> None:
        self._registry = services.capabilities.registry
        self._questions = services.questions
        self._parked = services.parked
        self._runtime = services.runtime

    def may_handle(self, connection: Connection, delivery: Delivery) -> bool:
        return asks_in_chat(self._registry, delivery.binding) and self._questions.may_take(
            connection, delivery.inbound, retried=delivery.retried)

    async def handle(self, delivery: Delivery) -> Handled | None:
        if not asks_in_chat(self._registry, delivery.binding):
            return None
        inbound = delivery.inbound
        if inbound.attachments:
            heard = await spoken(delivery.adapter, inbound, self._runtime.transcriber(delivery.binding))
            if isinstance(heard, str):
                return await refuse(delivery, heard)  # a voice note that cannot be heard answers nothing
            inbound = heard
        answered = await self._questions.take_answer(delivery.adapter, inbound, retried=delivery.retried)
        if answered is None:
            return None
        return Handled(finish=await self._parked.resume(delivery.adapter, answered.parked_run_id,
                                                     reclaim=answered.retried))


def asks_in_chat(registry: Registry, binding: Binding) -> bool:
    """Whether a capability the binding's agent has switched on may put a question to the chat and wait for it."""
    for entry in binding.agent.spec.capabilities:
        definition = registry.get(entry.id)
        if entry.enabled and definition is not None and definition.asks_in_chat:
            return True
    return False
