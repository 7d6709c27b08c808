"""`link`, `unlink`, `forget` in a DM, or a link code typed in a group, and `stop` (which intake puts in the lane
beside its conversation, claimed while the turn it stops runs): answered here, kept out of the history, no model
run."""

from __future__ import annotations

from gateway.people.commands import COMMAND, code_shaped
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import HANDLED, Delivery, Handled
from gateway.pipeline.turn_control import STOP_WORD


class Command:
    def __init__(self, services: StepServices) -> None:
        self._commands = services.commands
        self._conversations = services.conversations
        self._inbox = services.inbox
        self._control = services.control

    async def handle(self, delivery: Delivery) -> Handled | None:
        inbound, item = delivery.inbound, delivery.item
        if STOP_WORD.match(inbound.text.strip()):
            if item.reply_message_id is not None:
                return HANDLED  # answered before a crash
            answer = await self._control.stop(inbound.address.conversation_key, inbound.speaker)
            ref = await delivery.adapter.send(inbound.address, answer.text)
            await self._inbox.remember_reply(item.id, ref.message_id)
            return HANDLED
        match = COMMAND.match(inbound.text.strip())
        if match is None or not (inbound.address.is_direct or code_shaped(match["code"])):
            return None  # in a group, only `link CODE` with something shaped like a code
        if item.reply_message_id is not None:
            return HANDLED  # answered before a crash; running it again would spend a code or a second link attempt
        identity_id = await self._conversations.identity(inbound.speaker)
        ref = await delivery.adapter.send(inbound.address, await self._commands.answer(inbound, identity_id))
        await self._inbox.remember_reply(item.id, ref.message_id)
        return HANDLED
