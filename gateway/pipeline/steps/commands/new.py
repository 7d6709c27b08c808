"""`new`: a fresh conversation in this chat. The history of later turns starts after every turn stored so far
(`conversations.start_afresh`); the earlier turns stay in the database and in conversation search. Where a thread is
the conversation (Slack, Mattermost), the thread stays as it is and the answer says how to start another."""

from __future__ import annotations

from functools import partial

from adapters.protocols import FollowsThreads
from gateway.pipeline.conversations import start_afresh
from gateway.pipeline.steps.commands.call import ChatCommand, CommandCall, Handler, say
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Handled

STARTED = "Started afresh: from your next message on, I read nothing said here before."
ALREADY_NEW = "Nothing was said here yet: this conversation is new already."
IN_THREAD = ("This thread is its own conversation, and stays one. To start a new conversation, write to me outside "
             "this thread.")
THREADS_START_THEMSELVES = ("Here every message that names me outside a thread starts a new conversation, in a thread "
                            "of its own: just ask.")


def _new(services: StepServices) -> Handler:
    async def handle(call: CommandCall) -> Handled:
        delivery = call.delivery
        address, message_id = delivery.inbound.address, delivery.inbound.message_id
        if isinstance(delivery.adapter, FollowsThreads) and (address.thread_id is not None or not address.is_direct):
            text = IN_THREAD if address.thread_id not in (None, message_id) else THREADS_START_THEMSELVES
            return await say(call, text, services)
        if delivery.item.reply_message_id is not None:
            return await say(call, "", services)
        started = await services.db.run(partial(start_afresh, address=address))
        return await say(call, STARTED if started else ALREADY_NEW, services)
    return handle


NEW = ChatCommand(name="new", summary="start a new conversation: what was said before is not read again", build=_new)
