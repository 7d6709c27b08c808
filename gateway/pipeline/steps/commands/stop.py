"""`stop`: the running turn of this conversation ends, wherever it runs (`TurnControl.stop`); the person who asked may
stop it, and in a group whoever decides the binding's approvals. Said in the lane beside the conversation, so it is
not queued behind the turn it stops. A run waiting on approvals there has its pending calls denied instead
(`ParkedRuns.stop`), and goes on with the denials."""

from __future__ import annotations

from gateway.pipeline.steps.commands.call import ChatCommand, CommandCall, Handler, say
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Handled


def _stop(services: StepServices) -> Handler:
    async def handle(call: CommandCall) -> Handled:
        inbound = call.delivery.inbound
        key = inbound.address.conversation_key
        # A run waiting on approvals first: a turn that has just parked may still hold its inbox item a moment.
        waiting = await services.parked.stop(call.delivery.adapter, key, inbound.speaker,
                                             lambda text: say(call, text, services))
        if waiting is None:
            answer = await services.control.stop(key, inbound.speaker)
            return await say(call, answer.text, services)
        if waiting.answer.verdict == "refused":
            return await say(call, waiting.answer.text, services)
        return Handled(finish=waiting.finish)
    return handle


STOP = ChatCommand(name="stop", summary="stop the answer being written here", build=_stop, at_once=True)
