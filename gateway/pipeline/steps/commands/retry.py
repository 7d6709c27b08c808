"""`retry`: the person's last turn in this conversation runs again, and its answer replaces the earlier one: the
earlier answer's message is edited where the platform allows (`LiveReply` edits a recorded message), and the earlier
answer leaves the history once the new one is stored. It is a turn like any other, in the conversation's order."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from sqlalchemy import Connection

from gateway.pipeline.conversations import LastTurn, forget_answer, last_turn
from gateway.pipeline.steps.answer import Answer
from gateway.pipeline.steps.commands.call import ChatCommand, CommandCall, Handler, say
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import Delivery, Handled
from gateway.pipeline.worker import Finish

NOTHING_TO_RETRY = "There is nothing of yours to retry in this conversation yet."


def _retry(services: StepServices) -> Handler:
    answer = Answer(services)

    async def handle(call: CommandCall) -> Handled:
        delivery = call.delivery
        inbound = delivery.inbound
        turn = await services.db.run(partial(last_turn, address=inbound.address, speaker=inbound.speaker))
        if turn is None:
            return await say(call, NOTHING_TO_RETRY, services)
        handled = await answer.handle(_again(delivery, turn))
        if turn.answer_row is None:
            return handled
        return Handled(finish=_replacing(turn.answer_row, handled.finish))
    return handle


def _again(delivery: Delivery, turn: LastTurn) -> Delivery:
    """The earlier turn's delivery: its words and message, answered into the earlier answer's message (or, once this
    attempt posted one, into that). Its user turn is stored already, so it is looked up, not stored again."""
    inbound = replace(delivery.inbound, text=turn.text, message_id=turn.message_id, attachments=())
    item = delivery.item
    if item.reply_message_id is None and turn.answer_message_id is not None:
        item = replace(item, reply_message_id=turn.answer_message_id)
    return replace(delivery, item=item, inbound=inbound, retried=True)


def _replacing(answer_row: int, finish: Finish | None) -> Finish:
    def replaced(connection: Connection) -> None:
        forget_answer(connection, answer_row)
        if finish is not None:
            finish(connection)
    return replaced


RETRY = ChatCommand(name="retry", summary="answer your last message again, in place of the earlier answer",
                    build=_retry)
