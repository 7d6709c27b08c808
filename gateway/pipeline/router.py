"""One inbox item to one turn: bot ► binding ► access ► rate limit ► DM command? ► open question? ► conversation ►
runtime."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Protocol

from sqlalchemy import Connection

from adapters.base import ApprovalClick, Inbound, MalformedPayload, MessageRef
from adapters.platforms import PlatformAdapter
from adapters.protocols import Chat, ChatOutput, FollowsThreads, ReadsFiles
from gateway.agents.bindings import Binding, BindingStore, UnknownBot, is_listed
from gateway.people.commands import DirectCommands
from gateway.people.conversations import (
    Conversations,
    TurnRecord,
    record_answer,
    speaker_line,
    start_turn,
    thread_context,
)
from gateway.people.identities import user_key
from gateway.people.scope import memory_owner
from gateway.pipeline.attachments import fetch_attachments
from gateway.pipeline.inbox import Inbox, InboxItem, conversation_hash, remember_reply
from gateway.pipeline.intake import TypingShown
from gateway.pipeline.live_reply import LiveReply, Placeholder
from gateway.pipeline.metrics import GatewayMetrics
from gateway.pipeline.notices import OPERATOR_HAS_DETAILS
from gateway.pipeline.runtime import (
    Answered,
    Parked,
    RunOutcome,
    Runtime,
    Turn,
    TurnDeps,
    open_run,
    record_answered,
)
from gateway.pipeline.worker import Finish
from storage.cache import Cache
from storage.db import Database

log = logging.getLogger(__name__)

NOT_ALLOWED = "Sorry, this bot only answers people on its allowlist."
THREAD_CONTEXT_LIMIT = 50
"""How many earlier thread messages a bot first mentioned mid-thread reads."""
SLOW_DOWN = "You're sending messages faster than I can answer. Please wait a moment and try again."
GIVEN_UP = f"Sorry, I could not answer this message: it failed every time I tried. {OPERATOR_HAS_DETAILS}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TakenAnswer:
    """A message that answered an open question: the parked run it belongs to resumes."""

    parked_run_id: int
    retried: bool
    """The message was taken before a crash: the resume it started may be left half done."""


class ParkedRuns(Protocol):
    """Where a run waiting on people goes, and how it comes back (`gateway/approvals/parking.py`)."""

    async def park(self, adapter: Chat, deps: TurnDeps, conversation_id: int, outcome: Parked) -> None: ...

    async def on_click(self, adapter: Chat, click: ApprovalClick, *, retried: bool) -> None: ...

    async def resume(self, adapter: Chat, parked_run_id: int, *, reclaim: bool = False) -> None: ...


class OpenQuestions(Protocol):
    """Delegates' questions put to people (`gateway/approvals/questions.py`)."""

    def may_take(self, connection: Connection, inbound: Inbound, *, retried: bool) -> bool:
        """Whether `take_answer` could find anything for this message (reads only, in the claim's transaction)."""
        ...

    async def take_answer(self, inbound: Inbound, *, retried: bool) -> TakenAnswer | None:
        """The parked run a message answers the open question of, or None: the message is a turn of its own."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """What a claimed item's turn reads before it shows anything, read inside the claim's transaction."""

    inbound: Inbound
    binding: Binding
    may_answer_question: bool


class Router:
    def __init__(self, *, adapters: Mapping[str, PlatformAdapter], bindings: BindingStore, conversations: Conversations,
                 runtime: Runtime, cache: Cache, inbox: Inbox, approval_flow: ParkedRuns,
                 questions: OpenQuestions, commands: DirectCommands, db: Database,
                 metrics: GatewayMetrics | None = None, typing: TypingShown | None = None) -> None:
        """`typing`: what `Intake` showed typing in; a turn's first post clears it there."""
        self._db = db
        self._typing = typing or TypingShown()
        self._prepared: dict[int, Prepared] = {}
        self._adapters = adapters
        self._metrics = metrics or GatewayMetrics({})
        self._bindings = bindings
        self._conversations = conversations
        self._runtime = runtime
        self._cache = cache
        self._inbox = inbox
        self._approval_flow = approval_flow
        self._questions = questions
        self._commands = commands

    def prepare(self, connection: Connection, items: list[InboxItem]) -> None:
        """Inside the claim's transaction: each message's binding and whether it may answer an open question, so
        a plain turn reads nothing more before its placeholder. What cannot be prepared is read again in `handle`."""
        bindings: dict[str, Binding] = {}
        for item in items:
            adapter = self._adapters.get(item.bot_name)
            try:
                inbound = adapter.parse(item.payload) if adapter is not None else None
                if not isinstance(inbound, Inbound):
                    continue
                if item.bot_name not in bindings:
                    bindings[item.bot_name] = self._bindings.read(connection, item.bot_name)
            except (UnknownBot, MalformedPayload):  # `handle` says so in its own words
                continue
            may = self._questions.may_take(connection, inbound, retried=item.attempts > 1)
            self._prepared[item.id] = Prepared(inbound=inbound, binding=bindings[item.bot_name],
                                               may_answer_question=may)

    async def handle(self, item: InboxItem) -> Finish | None:
        prepared = self._prepared.pop(item.id, None)
        adapter = self._adapters.get(item.bot_name)
        if adapter is None:
            log.error("inbox item %d is for bot %r, which this gateway does not run", item.id, item.bot_name)
            return None
        inbound = prepared.inbound if prepared is not None else adapter.parse(item.payload)
        if isinstance(inbound, ApprovalClick):
            await self._approval_flow.on_click(adapter, inbound, retried=item.attempts > 1)
            return None
        if not isinstance(inbound, Inbound):
            return None
        binding = prepared.binding if prepared is not None else await self._bindings.load(item.bot_name)
        refusal = await self._refusal(inbound, binding)
        if refusal is not None:
            if refusal and item.reply_message_id is None:
                await adapter.send(inbound.address, refusal)
            return None
        if self._commands.recognizes(inbound):
            await self._command(adapter, inbound, item)
            return None
        # A question a delegate put to this person here is answered by their next message, not a new turn.
        if prepared is None or prepared.may_answer_question:
            answered = await self._questions.take_answer(inbound, retried=item.attempts > 1)
            if answered is not None:
                await self._approval_flow.resume(adapter, answered.parked_run_id, reclaim=answered.retried)
                return None
        return await self._answer(adapter, inbound, binding, item)

    async def give_up(self, item: InboxItem) -> None:
        """Tell the chat a message will not be answered: in the reply already begun, or in a new one."""
        adapter = self._adapters.get(item.bot_name)
        inbound = adapter.parse(item.payload) if adapter is not None else None
        if adapter is None or not isinstance(inbound, Inbound):
            return
        if item.reply_message_id is None:
            await adapter.send(inbound.address, GIVEN_UP)
        else:
            await adapter.edit(MessageRef(address=inbound.address, message_id=item.reply_message_id), GIVEN_UP)

    async def _command(self, adapter: ChatOutput, inbound: Inbound, item: InboxItem) -> None:
        """`link`, `unlink`, `forget` in a DM, or a link code typed in a group: answered here, kept out of the
        history, no model run."""
        if item.reply_message_id is not None:
            return  # answered before a crash; running it again would spend a code or a second link attempt
        identity_id = await self._conversations.identity(inbound.speaker)
        ref = await adapter.send(inbound.address, await self._commands.answer(inbound, identity_id))
        await self._inbox.remember_reply(item.id, ref.message_id)

    async def _answer(self, adapter: Chat, inbound: Inbound, binding: Binding, item: InboxItem) -> Finish | None:
        """The first sign (the person sees the bot react), then one transaction for the user's turn, the history,
        the run's row and the placeholder's id; the answer's rows are committed with the item's end. Where the
        first post waits for text (`waits_for_text`), it is stored by itself right after it is posted."""
        placeholder = Placeholder(recorded_id=item.reply_message_id, key=inbound.logical_id,
                                  record=partial(self._inbox.remember_reply, item.id),
                                  answering=inbound.message_id, retried=item.attempts > 1)
        # The first post clears the typing: a message queued after it is shown typing again at once.
        reply = LiveReply(adapter, inbound.address, placeholder=placeholder,
                          posting=partial(self._typing.cleared, inbound.address.conversation_key))
        try:
            return await self._answer_in(reply, adapter, inbound, binding, item)
        finally:
            await reply.cancel()  # a turn that failed before its first post must not keep showing typing

    async def _answer_in(self, reply: LiveReply, adapter: Chat, inbound: Inbound, binding: Binding,
                         item: InboxItem) -> Finish | None:
        started = time.monotonic()
        shown = await reply.start(record=False)
        group = not inbound.address.is_direct
        speaker = inbound.speaker
        prompt = speaker_line(speaker.display_name, inbound.text, group)
        files = await fetch_attachments(adapter if isinstance(adapter, ReadsFiles) else None, inbound.attachments)

        def begin(connection: Connection) -> tuple[Turn, TurnRecord, int]:
            record, earlier = start_turn(connection, inbound, retried=item.attempts > 1,
                                         limit=binding.spec.history_turns, name_speakers=group)
            owner = memory_owner(inbound.address, identity_id=record.identity_id, person_id=record.person_id,
                                 allow_personal=binding.spec.allow_personal_memory)
            turn = Turn(deps=TurnDeps(address=inbound.address, speaker=speaker, binding=binding, owner=owner,
                                      user_key=user_key(identity_id=record.identity_id, person_id=record.person_id)),
                        prompt=prompt, history=earlier, conversation_id=record.conversation_id,
                        identity_id=record.identity_id, inbox_id=item.id, files=files, retried=item.attempts > 1)
            if shown is not None and shown.message_id != item.reply_message_id:
                remember_reply(connection, item.id, shown.message_id)
            return turn, record, open_run(connection, turn)

        turn, record, run_id = await self._db.run(begin)
        # A thread this very message starts (a top-level mention on Slack) has nothing earlier to read.
        if record.first_turn and inbound.address.thread_id not in (None, inbound.message_id) \
                and isinstance(adapter, FollowsThreads):
            earlier = [m for m in await adapter.read_thread(inbound.address, limit=THREAD_CONTEXT_LIMIT)
                       if m.message_id != reply.message_id]  # our own placeholder, posted just before
            turn = replace(turn, history=thread_context(earlier, before=inbound.message_id))
        outcome = await self._runtime.run(turn, reply, run_id=run_id, record_answer=False)
        self._account(binding, item, outcome, started=started, posted_at=reply.posted_at)
        if isinstance(outcome, Answered):
            answered = outcome

            def finish(connection: Connection) -> None:
                record_answered(connection, answered)
                record_answer(connection, record.conversation_id, run_id=answered.run_id, text=answered.text,
                              speaker_name=binding.agent.name, platform_message_id=answered.message_id)
            return finish
        if isinstance(outcome, Parked):
            await self._approval_flow.park(adapter, turn.deps, record.conversation_id, outcome)
        return None

    def _account(self, binding: Binding, item: InboxItem, outcome: RunOutcome, *, started: float,
                 posted_at: float | None) -> None:
        """The turn's metrics and its one INFO line: no text, no ids of people, the conversation key hashed."""
        final = time.monotonic() - started
        first_post = None if posted_at is None else max(0.0, posted_at - started)
        kind = "answered" if isinstance(outcome, Answered) else "parked" if isinstance(outcome, Parked) else "failed"
        usage, model = outcome.usage, binding.agent.spec.model
        self._metrics.turn(binding.bot_name, kind, first_post=first_post, final=final)
        self._metrics.model_used(model, requests=usage.requests, input_tokens=usage.input_tokens,
                                 output_tokens=usage.output_tokens)
        fields = {"bot": binding.bot_name, "conversation": conversation_hash(item.conversation_key),
                  "inbox_id": item.id, "run_id": outcome.run_id, "outcome": kind, "model": model,
                  "first_post_ms": None if first_post is None else round(first_post * 1000),
                  "final_ms": round(final * 1000), "requests": usage.requests,
                  "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
        log.info("turn %s", " ".join(f"{name}={value}" for name, value in fields.items()), extra={"turn": fields})

    async def _refusal(self, inbound: Inbound, binding: Binding) -> str | None:
        """None admits the message; a text refuses it with that answer; "" refuses it silently."""
        speaker = inbound.speaker
        if binding.spec.access == "allowlist" and not is_listed(inbound.speaker, binding.spec.allow):
            log.info("bot %r refused %s: not on the allowlist", binding.bot_name, speaker.platform_user_id)
            self._metrics.refused(binding.bot_name, "allowlist")
            return NOT_ALLOWED
        limit = binding.spec.rate_limit
        key = f"{binding.bot_name}:{speaker.platform_user_id}"
        if limit and await self._cache.hit_rate_limit(key, limit=limit.messages, window=limit.per_seconds):
            log.info("bot %r rate-limited %s", binding.bot_name, speaker.platform_user_id)
            self._metrics.refused(binding.bot_name, "rate_limit")
            first = await self._cache.set_if_absent(f"slowdown:{key}", "1", ttl=limit.per_seconds)
            return SLOW_DOWN if first else ""
        return None
