"""One inbox item to one turn: bot ► binding ► access ► rate limit ► DM command? ► open question? ► conversation ►
runtime."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from adapters.base import ApprovalClick, Inbound, MessageRef
from adapters.platforms import PlatformAdapter
from adapters.protocols import Chat, ChatOutput, FollowsThreads, ReadsFiles
from gateway.agents.bindings import Binding, BindingStore, is_listed
from gateway.people.commands import DirectCommands
from gateway.people.conversations import Conversations, speaker_line, thread_context
from gateway.people.scope import memory_owner
from gateway.pipeline.attachments import fetch_attachments
from gateway.pipeline.inbox import Inbox, InboxItem
from gateway.pipeline.live_reply import LiveReply, Placeholder
from gateway.pipeline.metrics import GatewayMetrics
from gateway.pipeline.runtime import OPERATOR_HAS_DETAILS, Answered, Parked, RunOutcome, Runtime, Turn, TurnDeps
from storage.cache import Cache

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

    async def take_answer(self, inbound: Inbound, *, retried: bool) -> TakenAnswer | None:
        """The parked run a message answers the open question of, or None: the message is a turn of its own."""
        ...


class Router:
    def __init__(self, *, adapters: Mapping[str, PlatformAdapter], bindings: BindingStore, conversations: Conversations,
                 runtime: Runtime, cache: Cache, inbox: Inbox, approval_flow: ParkedRuns,
                 questions: OpenQuestions, commands: DirectCommands, metrics: GatewayMetrics | None = None) -> None:
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

    async def handle(self, item: InboxItem) -> None:
        adapter = self._adapters.get(item.bot_name)
        if adapter is None:
            log.error("inbox item %d is for bot %r, which this gateway does not run", item.id, item.bot_name)
            return
        inbound = adapter.parse(item.payload)
        if isinstance(inbound, ApprovalClick):
            await self._approval_flow.on_click(adapter, inbound, retried=item.attempts > 1)
            return
        if not isinstance(inbound, Inbound):
            return
        binding = await self._bindings.load(item.bot_name)
        refusal = await self._refusal(inbound, binding)
        if refusal is not None:
            if refusal and item.reply_message_id is None:
                await adapter.send(inbound.address, refusal)
            return
        if self._commands.recognizes(inbound):
            await self._command(adapter, inbound, item)
            return
        # A question a delegate put to this person here is answered by their next message, not a new turn.
        answered = await self._questions.take_answer(inbound, retried=item.attempts > 1)
        if answered is not None:
            await self._approval_flow.resume(adapter, answered.parked_run_id, reclaim=answered.retried)
            return
        await self._answer(adapter, inbound, binding, item)

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

    async def _answer(self, adapter: Chat, inbound: Inbound, binding: Binding, item: InboxItem) -> None:
        record = await self._conversations.record_user_turn(inbound)
        group = not inbound.address.is_direct
        history = await self._conversations.history(record, limit=binding.spec.history_turns, name_speakers=group)
        # A thread this very message starts (a top-level mention on Slack) has nothing earlier to read.
        if record.first_turn and inbound.address.thread_id not in (None, inbound.message_id) \
                and isinstance(adapter, FollowsThreads):
            earlier = await adapter.read_thread(inbound.address, limit=THREAD_CONTEXT_LIMIT)
            history = thread_context(earlier, before=inbound.message_id)
        owner = memory_owner(inbound.address, identity_id=record.identity_id, person_id=record.person_id,
                             allow_personal=binding.spec.allow_personal_memory)
        turn = Turn(deps=TurnDeps(address=inbound.address, speaker=inbound.speaker, binding=binding, owner=owner),
                    prompt=speaker_line(inbound.speaker.display_name, inbound.text, group),
                    history=history, conversation_id=record.conversation_id,
                    identity_id=record.identity_id, inbox_id=item.id,
                    files=await fetch_attachments(adapter if isinstance(adapter, ReadsFiles) else None,
                                                  inbound.attachments))
        placeholder = Placeholder(recorded_id=item.reply_message_id, key=inbound.logical_id,
                                  record=partial(self._inbox.remember_reply, item.id),
                                  answering=inbound.message_id, retried=item.attempts > 1)
        reply = LiveReply(adapter, inbound.address, placeholder=placeholder)
        started = time.monotonic()
        outcome = await self._runtime.run(turn, reply)
        self._account(binding, item, outcome, started=started, posted_at=reply.posted_at)
        if isinstance(outcome, Answered):
            await self._conversations.record_answer(record.conversation_id, run_id=outcome.run_id, text=outcome.text,
                                                    speaker_name=binding.agent.name,
                                                    platform_message_id=outcome.message_id)
        elif isinstance(outcome, Parked):
            await self._approval_flow.park(adapter, turn.deps, record.conversation_id, outcome)

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


def conversation_hash(key: str) -> str:
    """A conversation key as logs carry it: stable, so one conversation's turns can be followed, but no chat id."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]
