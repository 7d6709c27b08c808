"""`usage`: what this person spent today and this month, per agent, and where they stand against the binding's
limits (`gateway/pipeline/usage_report.py`)."""

from __future__ import annotations

from gateway.pipeline.steps.commands.call import ChatCommand, CommandCall, Handler, say
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Handled
from gateway.pipeline.usage_report import usage_report


def _usage(services: StepServices) -> Handler:
    async def handle(call: CommandCall) -> Handled:
        delivery = call.delivery
        return await say(call, await usage_report(services.db, delivery.binding, delivery.inbound.speaker), services)
    return handle


USAGE = ChatCommand(name="usage", summary="your tokens and cost today and this month, and your limits", build=_usage,
                    at_once=True)
