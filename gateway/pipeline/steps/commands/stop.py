"""`stop`: the running turn of this conversation ends, wherever it runs (`TurnControl.stop`); the person who asked may
stop it, and in a group whoever decides the binding's approvals. Said in the lane beside the conversation, so it is
not queued behind the turn it stops."""

from __future__ import annotations

from gateway.pipeline.steps.commands.call import ChatCommand, CommandCall, Handler, say
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Handled


def _stop(services: StepServices) -> Handler:
    async def handle(call: CommandCall) -> Handled:
        inbound = call.delivery.inbound
        answer = await services.control.stop(inbound.address.conversation_key, inbound.speaker)
        return await say(call, answer.text, services)
    return handle


STOP = ChatCommand(name="stop", summary="stop the answer being written here", build=_stop, at_once=True)
