"""One inbox item to its outcome: the bot's adapter, the parsed event, the binding, then the steps in order
(`gateway/pipeline/steps/`); an approval click, or a console operator's decision, goes to the parked run it decides,
a click on a question's option to the run that asked it, a 👍 / 👎 to its run's feedback; a firing (a schedule's, a
reminder's, a webhook's) is posted as written or walks the steps of a run nobody wrote (`FIRING_STEPS`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from adapters.base import FEEDBACK_VERBS, ApprovalClick, Inbound, MalformedPayload, MessageRef
from adapters.platforms import PlatformAdapter
from adapters.protocols import Parser, Reacts
from capabilities.registry import BoundRegistry
from gateway.agents.bindings import Binding, BindingStore, UnknownBot
from gateway.people.commands import DirectCommands
from gateway.pipeline.conversations import Conversations
from gateway.pipeline.feedback import RunFeedback
from gateway.pipeline.firing_posts import post_firing
from gateway.pipeline.firings import SOURCES, Firing, firing_of
from gateway.pipeline.inbox import Inbox, InboxItem, conversation_hash
from gateway.pipeline.intake import TypingShown
from gateway.pipeline.metrics import GatewayMetrics
from gateway.pipeline.notices import OPERATOR_HAS_DETAILS
from gateway.pipeline.operator_decisions import operator_decision
from gateway.pipeline.runtime import Answered, Parked, RunOutcome, Runtime, Stopped
from gateway.pipeline.steps import FIRING_STEPS, STEPS
from gateway.pipeline.steps.access import Access
from gateway.pipeline.steps.services import OpenQuestions, ParkedRuns, StepServices
from gateway.pipeline.steps.step import Delivery, LooksAhead, Step
from gateway.pipeline.turn_control import TurnControl
from gateway.pipeline.worker import Finish
from storage.cache import Cache
from storage.db import Database

log = logging.getLogger(__name__)

GIVEN_UP = f"Sorry, I could not answer this message: it failed every time I tried. {OPERATOR_HAS_DETAILS}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """What a claimed item's delivery read inside the claim's transaction, so a plain turn reads nothing more
    before its placeholder."""

    event: Inbound | ApprovalClick
    delivery: Delivery | None = None
    """A message's, with its binding; None for a click."""
    skipped: frozenset[Step] = frozenset()
    """The steps that found, looking ahead, that they have nothing to do for it."""


class Router:
    def __init__(self, *, adapters: Mapping[str, PlatformAdapter], bindings: BindingStore, conversations: Conversations,
                 runtime: Runtime, cache: Cache, inbox: Inbox, approval_flow: ParkedRuns,
                 questions: OpenQuestions, commands: DirectCommands, db: Database, capabilities: BoundRegistry,
                 control: TurnControl, metrics: GatewayMetrics | None = None,
                 typing: TypingShown | None = None) -> None:
        """`typing`: what `Intake` showed typing in; a turn's first post clears it there. `capabilities`: those the
        deployment binds, whose declarations a step asks."""
        self._prepared: dict[int, Prepared] = {}
        self._adapters = adapters
        self._metrics = metrics or GatewayMetrics({})
        self._bindings = bindings
        self._approval_flow = approval_flow
        self._questions = questions
        self._typing = typing or TypingShown()
        services = StepServices(db=db, cache=cache, inbox=inbox, capabilities=capabilities, conversations=conversations,
                                commands=commands, runtime=runtime, parked=approval_flow, questions=questions,
                                metrics=self._metrics, typing=self._typing, account=self._account,
                                control=control)
        self._control = control
        self._feedback = RunFeedback(db, self._metrics)
        self._steps: Sequence[Step] = tuple(step for make in STEPS if (step := make(services)) is not None)
        self._firing_steps: Sequence[Step] = tuple(step for make in FIRING_STEPS
                                                    if (step := make(services)) is not None)
        self._idle: dict[Step, tuple[str, object]] = {
            step: idle for step in (*self._steps, *self._firing_steps) if (idle := getattr(step, "skipped_when", None))}
        """Each `ForOneSetting` step's field and idle value: read here once, so skipping the step calls nothing."""
        self._inbox = inbox

    def prepare(self, connection: Connection, items: list[InboxItem]) -> None:
        """Inside the claim's transaction: each item's event (as intake parsed it here, else from its payload), a
        message's binding, and which steps have nothing to do for it. What cannot be prepared is read again in
        `handle`."""
        bindings: dict[str, Binding] = {}
        for item in items:
            try:
                prepared = self._prepared_item(connection, item, bindings)
            except (UnknownBot, MalformedPayload):  # `handle` says so in its own words
                continue
            if prepared is not None:
                self._prepared[item.id] = prepared

    def _prepared_item(self, connection: Connection, item: InboxItem,
                       bindings: dict[str, Binding]) -> Prepared | None:
        """`bindings`: those this claim read so far, by bot name (a claim of several items reads each once)."""
        adapter = self._adapters.get(item.bot_name)
        if adapter is None or item.logical_id.startswith(SOURCES):  # a firing reads its binding when it is handled
            return None
        event = _event(adapter, item)
        if event is None:
            return None
        if isinstance(event, ApprovalClick):
            return Prepared(event=event)
        if item.bot_name not in bindings:
            bindings[item.bot_name] = self._bindings.read(connection, item.bot_name)
        delivery = Delivery(item=item, inbound=event, binding=bindings[item.bot_name], adapter=adapter,
                            retried=item.attempts > 1)
        skipped = frozenset(step for step in self._steps
                            if isinstance(step, LooksAhead) and not step.may_handle(connection, delivery))
        return Prepared(event=event, delivery=delivery, skipped=skipped)

    async def handle(self, item: InboxItem) -> Finish | None:
        prepared = self._prepared.pop(item.id, None)
        adapter = self._adapters.get(item.bot_name)
        if adapter is None:
            log.error("inbox item %d is for bot %r, which this gateway does not run", item.id, item.bot_name)
            return None
        # the key is read here first, so a message's path runs no code of the firings' modules
        if item.logical_id.startswith(SOURCES) and (firing := firing_of(item)) is not None:
            return await self._fire(adapter, item, firing)
        # an operator's decision is never parsed by a platform: what was prepared or parsed here is not one
        decision = operator_decision(item.payload) if prepared is None and item.event is None else None
        if decision is not None:
            return await self._approval_flow.on_operator_decision(adapter, decision, retried=item.attempts > 1)
        event = prepared.event if prepared is not None else _event(adapter, item)
        if isinstance(event, ApprovalClick) and event.verb in FEEDBACK_VERBS:
            await self._feedback.on_click(adapter, event, bot_name=item.bot_name)  # never a turn
            return None
        if isinstance(event, ApprovalClick) and event.verb == "stop":
            answer = await self._control.stop(event.card.address.conversation_key, event.clicker)
            await adapter.answer_click(event, answer.text, refused=answer.verdict != "stopping")
            return None
        if isinstance(event, ApprovalClick) and event.verb == "choose":
            taken = await self._questions.take_choice(adapter, event, retried=item.attempts > 1)
            return None if taken is None else await self._approval_flow.resume(adapter, taken.parked_run_id,
                                                                              reclaim=taken.retried)
        if isinstance(event, ApprovalClick):
            return await self._approval_flow.on_click(adapter, event, retried=item.attempts > 1)
        if not isinstance(event, Inbound):
            return None
        if prepared is not None and prepared.delivery is not None:
            return await self._walk(prepared.delivery, skipped=prepared.skipped)
        binding = await self._bindings.load(item.bot_name)
        return await self._walk(Delivery(item=item, inbound=event, binding=binding, adapter=adapter,
                                         retried=item.attempts > 1))

    async def _fire(self, adapter: PlatformAdapter, item: InboxItem, firing: Firing) -> Finish | None:
        """A firing's text posted as written, or its run: the steps of a run nobody wrote. An operator's firing has
        no person whose access to check."""
        binding = await self._bindings.load(item.bot_name)
        if firing.mode == "message":
            return await post_firing(adapter, item, firing, inbox=self._inbox, typing=self._typing,
                                     agent_name=binding.agent.name)
        steps = [step for step in self._firing_steps if firing.speaker is not None or not isinstance(step, Access)]
        delivery = Delivery(item=item, inbound=firing.inbound(item.logical_id), binding=binding, adapter=adapter,
                            retried=item.attempts > 1)
        return await self._walk(delivery, steps=steps)

    async def _walk(self, delivery: Delivery, *, skipped: frozenset[Step] = frozenset(),
                    steps: Sequence[Step] | None = None) -> Finish | None:
        """The steps in order (`steps`: a firing's), until one ends the delivery. The sign `Intake` kept up while
        the message queued stops here: the turn's own reply shows one from now on."""
        self._typing.taken(delivery.inbound.address.conversation_key)
        spec = delivery.binding.spec
        for step in self._steps if steps is None else steps:
            idle = step in self._idle and getattr(spec, self._idle[step][0]) == self._idle[step][1]
            handled = None if step in skipped or idle else await step.handle(delivery)
            if handled is not None:
                await _unreact(delivery)
                return handled.finish
        await _unreact(delivery)
        return None

    async def give_up(self, item: InboxItem) -> None:
        """Tell the chat a message will not be answered: in the reply already begun, or in a new one."""
        adapter = self._adapters.get(item.bot_name)
        firing = firing_of(item)
        inbound = firing.inbound(item.logical_id) if firing is not None else \
            _event(adapter, item) if adapter is not None else None
        if adapter is None or not isinstance(inbound, Inbound):
            return
        if item.reply_message_id is None:
            await adapter.send(inbound.address, GIVEN_UP)
        else:
            await adapter.edit(MessageRef(address=inbound.address, message_id=item.reply_message_id), GIVEN_UP)

    def _account(self, delivery: Delivery, outcome: RunOutcome, *, started: float, posted_at: float | None) -> None:
        """The turn's metrics and its one INFO line: no text, no ids of people, the conversation key hashed."""
        binding, item = delivery.binding, delivery.item
        final = time.monotonic() - started
        first_post = None if posted_at is None else max(0.0, posted_at - started)
        kind = ("answered" if isinstance(outcome, Answered) else "parked" if isinstance(outcome, Parked)
                else "stopped" if isinstance(outcome, Stopped) else "failed")
        usage, model = outcome.usage, binding.agent.spec.model
        self._metrics.turn(binding.bot_name, kind, first_post=first_post, final=final)
        self._metrics.model_used(model, requests=usage.requests, input_tokens=usage.input_tokens,
                                 output_tokens=usage.output_tokens)
        self._metrics.spent(binding.bot_name, binding.agent.name, requests=usage.requests,
                            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost=usage.cost)
        fields = {"bot": binding.bot_name, "conversation": conversation_hash(item.conversation_key),
                  "inbox_id": item.id, "run_id": outcome.run_id, "outcome": kind, "model": model,
                  "first_post_ms": None if first_post is None else round(first_post * 1000),
                  "final_ms": round(final * 1000), "requests": usage.requests,
                  "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                  "cost_usd": None if usage.cost is None else float(usage.cost)}
        log.info("turn %s", " ".join(f"{name}={value}" for name, value in fields.items()), extra={"turn": fields})


async def _unreact(delivery: Delivery) -> None:
    """The message was answered: the reaction intake set as its first sign goes (asked of every message the bot
    reacts to, on whichever replica set it; taking away none costs one call)."""
    adapter, inbound = delivery.adapter, delivery.inbound
    if not isinstance(adapter, Reacts) or not adapter.reacts or inbound.addressed == "schedule":
        return
    try:
        await adapter.react(MessageRef(address=inbound.address, message_id=inbound.message_id), "")
    except Exception as exc:  # a reaction is a courtesy; the answer stands without its removal
        log.debug("taking a reaction away failed in %s: %s", conversation_hash(inbound.address.conversation_key), exc)


def _event(adapter: Parser, item: InboxItem) -> Inbound | ApprovalClick | None:
    """The item's event: as intake parsed it in this process, else parsed from the stored payload; None for an
    operator's decision, which no platform parser reads."""
    if item.event is not None:
        return item.event
    return None if operator_decision(item.payload) is not None else adapter.parse(item.payload)
