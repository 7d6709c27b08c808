"""`link`, `unlink`, `forget`: the words `DirectCommands` answers (`gateway/people/commands.py`), one handler for the
three. In a DM only; in a group the words are ordinary messages, except `link CODE` with something shaped like a
code, which is answered with where codes work (and the code retired)."""

from __future__ import annotations

from gateway.people.commands import COMMAND, code_shaped
from gateway.pipeline.steps.commands.call import ChatCommand, CommandCall, Handler, say
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Handled


def _people(services: StepServices) -> Handler:
    async def handle(call: CommandCall) -> Handled | None:
        inbound = call.delivery.inbound
        match = COMMAND.match(inbound.text.strip())
        if match is None or not (inbound.address.is_direct or code_shaped(match["code"])):
            return None
        if call.delivery.item.reply_message_id is not None:
            return await say(call, "", services)  # answered before a crash: a second run would spend the code
        identity_id = await services.conversations.identity(inbound.speaker)
        return await say(call, await services.commands.answer(inbound, identity_id), services)
    return handle


LINK = ChatCommand(name="link", summary="link this account with yours on another platform (direct messages)",
                   build=_people, direct_only=True)
UNLINK = ChatCommand(name="unlink", summary="undo the link with your other accounts (direct messages)", build=_people,
                     direct_only=True)
FORGET = ChatCommand(name="forget", summary="delete what every agent remembers about you (direct messages)",
                     build=_people, direct_only=True)
