"""The agent answers: the first sign in the chat, the turn's start in one transaction, the run streamed live into
the reply, and its end committed with the inbox item (or the run parked for a person's decision); whose memory the
turn may touch, decided from who will hear the answer — never by the model."""

from __future__ import annotations

import time
from dataclasses import replace
from functools import partial

from sqlalchemy import Connection

from adapters.base import ChatAddress
from adapters.protocols import FollowsThreads
from capabilities.run import MemoryOwner
from gateway.agents.transcription import Transcriber
from gateway.pipeline.attachments import Attachment, fetch_attachments
from gateway.pipeline.conversations import TurnRecord, record_answer, speaker_line, start_turn, thread_context
from gateway.pipeline.inbox import remember_reply
from gateway.pipeline.live_reply import SENT_FROM_DRAFTS, LiveReply, Placeholder
from gateway.pipeline.notices import SEND_CUT_OFF
from gateway.pipeline.runtime import (
    Answered,
    Parked,
    Stopped,
    Turn,
    TurnDeps,
    close_cut_off,
    open_run,
    record_answered,
    set_run,
)
from gateway.pipeline.steps.services import StepServices
from gateway.pipeline.steps.step import HANDLED, Delivery, Handled, refuse
from gateway.pipeline.voice import heard, refusal
from gateway.pipeline.worker import Finish

THREAD_CONTEXT_LIMIT = 50
"""How many earlier thread messages a bot first mentioned mid-thread reads."""


class Answer:
    def __init__(self, services: StepServices) -> None:
        self._db = services.db
        self._inbox = services.inbox
        self._runtime = services.runtime
        self._parked = services.parked
        self._typing = services.typing
        self._account = services.account

    async def handle(self, delivery: Delivery) -> Handled:
        """The first sign (the person sees the bot react), then one transaction for the user's turn, the history,
        the run's row and the placeholder's id; the answer's rows are committed with the item's end. Where the
        first post waits for text (`waits_for_text`), it is stored by itself right after it is posted."""
        inbound, item = delivery.inbound, delivery.item
        if item.reply_message_id == SENT_FROM_DRAFTS:  # an earlier attempt died sending its drafted answer
            await self._db.run(lambda connection: close_cut_off(connection, item.id), single=True)
            await delivery.adapter.send(inbound.address, SEND_CUT_OFF)
            return HANDLED
        if inbound.attachments and (refused := refusal(inbound.attachments, self._transcriber(delivery))):
            return await refuse(delivery, refused)  # a voice note this agent cannot hear: said, no model run
        asked = inbound.addressed != "schedule"  # a firing answers no message: its reply is a new post
        placeholder = Placeholder(recorded_id=item.reply_message_id, key=inbound.logical_id,
                                  record=partial(self._inbox.remember_reply, item.id),
                                  answering=inbound.message_id if asked else None, retried=delivery.retried)
        # The first post clears the typing: a message queued after it is shown typing again at once.
        key = inbound.address.conversation_key
        reply = LiveReply(delivery.adapter, inbound.address, placeholder=placeholder,
                          posting=partial(self._typing.cleared, key), typed_at=self._typing.shown_at(key),
                          recipient=inbound.speaker if asked else None)
        try:
            return await self._answer(reply, delivery)
        finally:
            await reply.cancel()  # a turn that failed before its first post must not keep showing typing

    async def _answer(self, reply: LiveReply, delivery: Delivery) -> Handled:
        started = time.monotonic()
        shown = await reply.start(record=False)
        if (transcriber := self._transcriber(delivery)) and any(f.is_audio for f in delivery.inbound.attachments):
            hearing = await heard(delivery.adapter, delivery.inbound, transcriber)
            if isinstance(hearing, str):
                await reply.finish(hearing)
                return HANDLED
            delivery = replace(delivery, inbound=hearing)
        turn, record, run_id = await self._db.run(partial(_begin, delivery, await _files(delivery),
                                                          None if shown is None else shown.message_id))
        turn = await self._with_thread(turn, record, delivery, reply)
        outcome = await self._runtime.run(turn, reply, run_id=run_id)
        self._account(delivery, outcome, started=started, posted_at=reply.posted_at)
        if isinstance(outcome, Answered):
            return Handled(finish=finish_answered(outcome, record.conversation_id, delivery.binding.agent.name))
        if isinstance(outcome, Stopped):
            return Handled(finish=finish_stopped(outcome, record.conversation_id, delivery.binding.agent.name))
        if isinstance(outcome, Parked):  # resumed at once when every call was approved for the conversation already
            return Handled(finish=await self._parked.park(delivery.adapter, turn.deps, record.conversation_id,
                                                          outcome, inbox_id=turn.inbox_id))
        return HANDLED

    def _transcriber(self, delivery: Delivery) -> Transcriber | None:
        return self._runtime.transcriber(delivery.binding) if delivery.inbound.attachments else None

    @staticmethod
    async def _with_thread(turn: Turn, record: TurnRecord, delivery: Delivery, reply: LiveReply) -> Turn:
        """A bot first mentioned mid-thread reads the thread so far; a thread this very message starts (a top-level
        mention on Slack) has nothing earlier to read."""
        inbound, adapter = delivery.inbound, delivery.adapter
        if not record.first_turn or inbound.address.thread_id in (None, inbound.message_id) \
                or not isinstance(adapter, FollowsThreads):
            return turn
        earlier = [m for m in await adapter.read_thread(inbound.address, limit=THREAD_CONTEXT_LIMIT)
                   if m.message_id != reply.message_id]  # our own placeholder, posted just before
        return replace(turn, history=thread_context(earlier, before=inbound.message_id))


async def _files(delivery: Delivery) -> tuple[Attachment, ...]:
    """What the person attached, downloaded (or why not)."""
    adapter, attachments = delivery.adapter, delivery.inbound.attachments
    if not attachments:
        return ()
    return await fetch_attachments(adapter, attachments)


def _begin(delivery: Delivery, files: tuple[Attachment, ...], shown_id: str | None,
           connection: Connection) -> tuple[Turn, TurnRecord, int]:
    """The turn's start, in one transaction: the user's words, the history, the run's row, the placeholder's id."""
    inbound, item, binding = delivery.inbound, delivery.item, delivery.binding
    group = not inbound.address.is_direct
    record, earlier = start_turn(connection, inbound, retried=delivery.retried, limit=binding.spec.history_turns,
                                 name_speakers=group)
    owner = memory_owner(inbound.address, identity_id=record.identity_id, person_id=record.person_id,
                         allow_personal=binding.spec.allow_personal_memory)
    turn = Turn(deps=TurnDeps(address=inbound.address, speaker=inbound.speaker, binding=binding, owner=owner,
                              user_key=_user_key(identity_id=record.identity_id, person_id=record.person_id)),
                prompt=speaker_line(inbound.speaker.display_name, inbound.text, group), history=earlier,
                conversation_id=record.conversation_id, identity_id=record.identity_id, inbox_id=item.id,
                files=files, retried=delivery.retried)
    if shown_id is not None and shown_id != item.reply_message_id:
        remember_reply(connection, item.id, shown_id)
    return turn, record, open_run(connection, turn)


def finish_answered(answered: Answered, conversation_id: int, agent_name: str) -> Finish:
    """An answered run's end, committed with the inbox item that led to it (a turn's, a resume's): the run's row and
    the answer in the history."""
    def finish(connection: Connection) -> None:
        record_answered(connection, answered)
        record_answer(connection, conversation_id, run_id=answered.run_id, text=answered.text,
                      speaker_name=agent_name, platform_message_id=answered.message_id)
    return finish


def finish_stopped(stopped: Stopped, conversation_id: int, agent_name: str) -> Finish:
    """A stopped run's end, committed with its inbox item: the run's row says it was stopped, and what it had said
    goes into the history, marked; an interrupted run's partial answer is left out, so the next turn answers both."""
    def finish(connection: Connection) -> None:
        set_run(connection, stopped.run_id, status="stopped", usage=stopped.usage,
                error="interrupted by a newer message" if stopped.interrupted else f"stopped by {stopped.by}")
        if not stopped.interrupted:
            record_answer(connection, conversation_id, run_id=stopped.run_id, text=stopped.text,
                          speaker_name=agent_name, platform_message_id=stopped.message_id)
    return finish


def _user_key(*, identity_id: int, person_id: int | None) -> str:
    """One person across platforms when their identities are linked; otherwise this identity."""
    return f"person:{person_id}" if person_id is not None else f"identity:{identity_id}"


def memory_owner(address: ChatAddress, *, identity_id: int, person_id: int | None,
                 allow_personal: bool) -> MemoryOwner | None:
    """A DM reaches the speaker's notes (their linked person's when linked); a group reaches the room's.

    None means there is no store: personal memory is switched off for this bot and this is a DM.
    """
    if not address.is_direct:
        return MemoryOwner(kind="room", key=address.room_key)
    if not allow_personal:
        return None
    if person_id is not None:
        return MemoryOwner(kind="person", key=str(person_id))
    return MemoryOwner(kind="identity", key=str(identity_id))
