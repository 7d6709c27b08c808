"""Runs a freshly assembled agent per turn, live into the chat; parks it when a tool needs a person."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from pydantic_ai import (
    AgentRunResult,
    AgentStreamEvent,
    ConversationTypeAdapter,
    DeferredToolRequests,
    DeferredToolResults,
    FunctionToolCallEvent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    RunContext,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolReturnPart,
    UsageLimits,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RunUsage
from sqlalchemy import Connection, bindparam, insert, select, update

from adapters.base import ChatAddress, Directory, Speaker
from adapters.wire import is_object, objects_in
from capabilities.registry import AskedQuestion, BoundRegistry, RunRefused
from capabilities.run import MemoryOwner, RunFacts, Upload
from gateway.agents.assembly import AssembledAgent, assemble
from gateway.agents.bindings import AgentDefinition, Binding
from gateway.agents.mcp_servers import NO_SERVERS, ConnectedServers, McpServers
from gateway.agents.models import ModelResolver
from gateway.agents.placeholders import PLACEHOLDER
from gateway.agents.transcription import Transcriber
from gateway.config.schema import AgentSpec, BindingSpec
from gateway.config.secrets import SecretSource
from gateway.pipeline.attachments import Attachment, user_content
from gateway.pipeline.conversations import speaker_line
from gateway.pipeline.live_reply import LiveReply
from gateway.pipeline.notices import EXPLAINED_FAILURES, failure_notice, setup_fix
from gateway.pipeline.outbox import CLAIM, RunOutbox, turn_key
from gateway.pipeline.outbox_posting import FileChat
from gateway.pipeline.turn_control import TurnControl
from gateway.pipeline.worker import RunningTurns, TurnSignal, TurnStopped
from storage.conversation_state import StoredConversationState
from storage.db import Database
from storage.tables import RUNS, utcnow

log = logging.getLogger(__name__)

REQUEST_LIMIT = 25
STOPPED = "⏹ Stopped by {by}."
INTERRUPTED = "⏹ Interrupted by a newer message."
PLAIN_AGENTS = 256
"""Assembled agents kept for bindings that build nothing per run; past it the oldest goes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnDeps:
    """What the server decided for this run; tools read it, the model never chooses it."""

    address: ChatAddress
    speaker: Speaker
    binding: Binding
    owner: MemoryOwner | None = None
    """Whose memory this run reaches (`gateway/pipeline/scope.py`); None: no store in this conversation."""
    background: bool = False
    """True inside a background delegation: a gated tool there is refused, since nobody can be asked."""
    user_key: str | None = None
    """The speaker as one person across platforms (`person:<id>` when linked, else `identity:<id>`): what a
    `user`-scoped workspace is keyed on."""

    def for_background(self) -> TurnDeps:
        return replace(self, background=True)

    def clone_for_subagent(self, max_depth: int = 0) -> TurnDeps:
        """A delegate's deps: the same server-side facts. subagents-pydantic-ai calls this with its remaining
        depth; the gateway bounds depth where it builds delegates (`DelegationFacts.depth_left`), so it goes unread."""
        return replace(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    deps: TurnDeps
    prompt: str
    history: list[ModelMessage]
    conversation_id: int
    identity_id: int
    inbox_id: int | None
    files: tuple[Attachment, ...] = ()
    """What the person attached, downloaded (or why not): part of the prompt as far as the model takes it."""
    retried: bool = False
    """An earlier attempt of this turn was interrupted: it may have stored files the outbox has still to post."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GatedCall:
    """A call a person approves or denies with buttons (`gateway/approvals/parking.py`)."""

    tool_call_id: str
    tool_id: str
    """The stable id the gate is keyed on."""
    tool_name: str
    args: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class DelegateQuestion:
    """A synchronous delegate's question to the run's person, answered by their next message
    (`gateway/approvals/questions.py`); the parked call is the `task` that reached the delegate."""

    tool_call_id: str
    specialist: str
    question: str
    choices: tuple[str, ...] = ()
    """The options offered, shown as buttons; none: answered in words."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Answered:
    run_id: int
    text: str
    message_id: str
    usage: RunUsage = field(default_factory=RunUsage)
    """What the run spent, its delegates included."""
    steps: tuple[dict[str, str], ...] = ()
    """The run's model responses and tool returns in order (`run_steps`), for the console's timeline."""
    first_shown_at: datetime | None = None
    """When the answer's first text showed in the chat."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Parked:
    run_id: int
    calls: tuple[GatedCall, ...]
    """The calls waiting on an approval."""
    questions: tuple[DelegateQuestion, ...] = ()
    """The calls waiting on an answer to a delegate's question."""
    state: str
    """The pydantic-ai conversation as JSON: enough to resume on any replica."""
    specialists: tuple[dict[str, Any], ...] = ()
    """The specialists the model wrote in this run (`create_agent`): carried with the parked run, restored on resume."""
    placeholder_id: str | None = None
    """The reply's message when it shows only the waiting line: the first card takes it over, so a gated call
    leaves the card and the answer. None when the model wrote something of its own there, or files were posted
    below it (the cards come after the files)."""
    usage: RunUsage = field(default_factory=RunUsage)


@dataclass(frozen=True, slots=True, kw_only=True)
class Failed:
    run_id: int
    error: str
    message_id: str
    usage: RunUsage = field(default_factory=RunUsage)


@dataclass(frozen=True, slots=True, kw_only=True)
class Stopped:
    """A run stopped while it ran: by a person, or interrupted by a newer message (`while_busy: interrupt`)."""

    run_id: int
    text: str
    """What the model had said, as the chat shows it (with the stopped mark)."""
    message_id: str
    by: str
    interrupted: bool = False
    usage: RunUsage = field(default_factory=RunUsage)


RunOutcome = Answered | Parked | Failed | Stopped


@dataclass(frozen=True, slots=True, kw_only=True)
class Booked:
    """What a parked run had booked when it parked, kept in its snapshot for the resume to go on from."""

    usage: RunUsage
    """Its whole spending so far, delegates' included (the run row's)."""
    inbox_id: int | None
    """The item of the turn that parked: the key its outbox goes on under (`turn_key`)."""

    def snapshot(self) -> dict[str, Any]:
        cost = None if self.usage.cost is None else str(self.usage.cost)
        return {"inbox_id": self.inbox_id, "usage": {"requests": self.usage.requests,
                                                     "input_tokens": self.usage.input_tokens,
                                                     "output_tokens": self.usage.output_tokens, "cost": cost}}

    @staticmethod
    def of_snapshot(snapshot: Mapping[str, Any]) -> Booked | None:
        """As `snapshot()` stored it; None for a snapshot without it, whose run's row holds it (`Runtime.booked`)."""
        stored = snapshot.get("booked")
        if stored is None:
            return None
        usage = dict(stored["usage"])
        cost = usage.pop("cost", None)
        return Booked(usage=RunUsage(**usage, cost=None if cost is None else Decimal(cost)),
                      inbox_id=stored["inbox_id"])


def spent_since(total: RunUsage, before: RunUsage) -> RunUsage:
    """What `total` adds to `before`, never below nothing (a failed run books only its delegates); the cost stays
    unknown (None) when `total`'s is."""
    cost = None if total.cost is None else max(Decimal(0), total.cost - (before.cost or 0))
    return RunUsage(requests=max(0, total.requests - before.requests),
                    input_tokens=max(0, total.input_tokens - before.input_tokens),
                    output_tokens=max(0, total.output_tokens - before.output_tokens), cost=cost)


@dataclass(frozen=True, slots=True, kw_only=True)
class Chats:
    """Each bot's side of its runs: its channel lookups and how it posts a run's files, by bot name."""

    directories: Mapping[str, Directory] = field(default_factory=dict[str, Directory])
    files: Mapping[str, FileChat] = field(default_factory=dict[str, FileChat])
    """The adapters that post files; a run's outbox posts through its bot's."""
    file_claim: timedelta = CLAIM
    """How long a run's outbox holds a file it is posting between renewals (`gateway/pipeline/outbox_posting.py`)."""
    control: TurnControl | None = None
    """The people's hold on a running turn: its stop (read by the worker's heartbeat, `control.turns`) and the
    messages they send meanwhile (`while_busy`). None: runs cannot be stopped or steered."""


class Runtime:
    def __init__(self, *, models: ModelResolver, db: Database, capabilities: BoundRegistry,
                 mcp: McpServers | None = None, chats: Chats = Chats(),
                 instrumentation: InstrumentationSettings | None = None) -> None:
        """`capabilities`: the registry bound to this deployment's services at start (`Registry.bind`). `mcp`: the
        operator's MCP servers, reached per run for the agents that bind them. `instrumentation`: pydantic-ai's
        spans for every agent run (`gateway/server/tracing.py`); None: none."""
        self._models = models
        self._db = db
        self._capabilities = capabilities
        self._mcp = mcp or McpServers(servers={}, secrets=SecretSource(environ={}))
        self._chats = chats
        self._instrumentation = instrumentation
        self._control = chats.control
        self._turns = chats.control.turns if chats.control is not None else RunningTurns()
        self._interrupts: set[asyncio.Task[None]] = set()
        self._plain: dict[tuple[str, str, int, str], AssembledAgent] = {}
        """The assembled agents of bindings that build nothing per run (no capability, no MCP server, no channel
        placeholder), by bot, agent, version and binding instructions: one pydantic-ai Agent serves all their runs."""

    def transcriber(self, binding: Binding) -> Transcriber | None:
        """How the binding's agent hears a voice note: its model profile's `transcription`; None: it does not."""
        return self._models.transcriber(binding.agent.spec.model)

    async def run(self, turn: Turn, reply: LiveReply, *, run_id: int | None = None) -> RunOutcome:
        """`run_id`: the row `open_run` opened (in the caller's transaction). An answered run's row is left to
        `record_answered`, which the caller commits with the rest of the turn's end."""
        if run_id is None:
            run_id = await self.open_run(turn)
        signal = self._turns.get(turn.inbox_id)
        if signal is not None and turn.retried:
            signal.retaking = True  # an earlier attempt may have taken messages: take them again
        return await self._drive(run_id, turn.deps, reply, prompt=turn.prompt, history=turn.history, files=turn.files,
                                 inbox_id=turn.inbox_id, retried=turn.retried)

    async def resume(self, run_id: int, deps: TurnDeps, state: str, results: DeferredToolResults,
                     reply: LiveReply, *, booked: Booked, specialists: Sequence[Mapping[str, Any]] = ()) -> RunOutcome:
        """Continue a parked run with the decisions, as the same agent version and binding, and with the
        specialists the model wrote before it parked. An answered run's row is left to `record_answered`, which the
        caller commits with the rest of the resume's end."""
        await self._set_run(run_id, status="running")
        conversation = ConversationTypeAdapter.validate_json(state)
        # What delegates spent before the park: the row booked it, the parked conversation carries only the agent's
        # own usage, which the continuation counts on from.
        delegated = spent_since(booked.usage, conversation.usage)
        return await self._drive(run_id, deps, reply, resuming=True, delegated=delegated, conversation=conversation,
                                 results=results, specialists=specialists, inbox_id=booked.inbox_id)

    async def _drive(self, run_id: int, deps: TurnDeps, reply: LiveReply, **kwargs: Any) -> RunOutcome:
        """The run with the MCP servers its agent binds connected for its length (those down are skipped)."""
        await reply.start()
        try:
            if not deps.binding.agent.spec.mcp_servers:
                return await self._drive_connected(run_id, deps, reply, mcp=NO_SERVERS, **kwargs)
            async with self._mcp.connect(deps.binding.agent.spec) as mcp:
                return await self._drive_connected(run_id, deps, reply, mcp=mcp, **kwargs)
        finally:
            await reply.cancel()  # typing shown until a first post stops with the run, however it ends

    async def _drive_connected(self, run_id: int, deps: TurnDeps, reply: LiveReply, *, mcp: ConnectedServers,
                               resuming: bool = False, delegated: RunUsage | None = None,
                               specialists: Sequence[Mapping[str, Any]] = (), files: Sequence[Attachment] = (),
                               inbox_id: int | None, retried: bool = False, **run_input: Any) -> RunOutcome:
        """`inbox_id`: the item of the run's turn, which keys its outbox; `retried`: an earlier attempt of this turn
        may have stored files it did not post."""
        bot = deps.binding.bot_name
        bound = _bound_ids(deps.binding)
        outbox = None
        if bound and self._capabilities.registry.posts_files(bound):
            outbox = RunOutbox(self._db, self._chats.files.get(bot), deps.address, run_id=run_id,
                               key=turn_key(run_id, inbox_id), earlier=retried or resuming,
                               claim=self._chats.file_claim)
        run = RunFacts(address=deps.address, agent_name=deps.binding.agent.name, owner=deps.owner,
                       speaker=deps.speaker, user_key=deps.user_key, run_id=run_id,
                       directory=self._chats.directories.get(bot), notice=reply.notice,
                       state=StoredConversationState(self._db, deps.address.conversation_key) if bound else None,
                       resuming=resuming, outbox=outbox, sandbox_scope=deps.binding.spec.sandbox_scope,
                       mcp_servers=tuple(connected.server.name for connected in mcp.servers),
                       uploads=tuple(Upload(name=file.name, data=file.data) for file in files if file.data is not None))
        assembled: AssembledAgent | None = None
        try:  # from here on, whatever fails (the model's set-up included) ends in a notice, never in silence
            assembled = self._assembled(deps.binding, run, plain=not (bound or mcp.servers or specialists),
                                        specialists=specialists, mcp=mcp)
            if delegated is not None:
                assembled.delegated.incr(delegated)
            if files:  # what the model takes of them depends on the model, known only now
                run_input["prompt"] = user_content(run_input["prompt"], files, assembled.agent.model)
            result = await self._stream(assembled, deps, reply, signal=self._turns.get(inbox_id) if not resuming
                                        else None, **run_input)
        except TurnStopped as exc:
            return await self._stopped(run_id, reply, exc, assembled, outbox)
        except RunRefused as exc:  # a refusal is the platform doing its job: an outcome of its own
            log.info("run %d for bot %r refused at the %s edge (%s)", run_id, deps.binding.bot_name, exc.edge,
                     exc.status)
            refs = await reply.finish(exc.notice)
            await _deliver(outbox)
            await self._set_run(run_id, status=exc.status, error=str(exc))
            if assembled is not None:
                await _end(assembled)
            return Failed(run_id=run_id, error=str(exc), message_id=refs[0].message_id)
        except Exception as exc:
            before = run_input["conversation"].usage if resuming else RunUsage()
            failed = await self._failed(run_id, deps, reply, exc, assembled, before=before)
            await _deliver(outbox)  # what the run made before it failed is still the person's
            return failed
        if isinstance(result.output, DeferredToolRequests):
            calls, questions = _waiting_on(result.output, assembled, self._capabilities.asked)
            waiting = ("I need a decision before I can continue:" if calls
                       else "I need an answer before I can continue:")
            await reply.finish(reply.shown_text or waiting)
            # Before the cards: the person sees what was made, then what is asked. A card that took over the
            # placeholder would sit above the files just posted, so then each card is a message of its own.
            shown_files = await _deliver(outbox)
            usage = result.usage + assembled.delegated
            await self._set_run(run_id, status="parked", usage=usage)
            return Parked(run_id=run_id, calls=calls, questions=questions, usage=usage,
                          state=ConversationTypeAdapter.dump_json(result.conversation).decode(),
                          specialists=tuple(assembled.specialists.values()),
                          placeholder_id=None if reply.shown_text.strip() or shown_files else reply.message_id)
        refs = await reply.finish(result.output, rated_run=run_id if deps.binding.spec.feedback else None)
        await _deliver(outbox)
        usage = result.usage + assembled.delegated
        answered = Answered(run_id=run_id, text=result.output, message_id=refs[0].message_id, usage=usage,
                            steps=run_steps(result.new_messages()), first_shown_at=_wall(reply.posted_at))
        await _end(assembled)
        return answered

    def _assembled(self, binding: Binding, run: RunFacts, *, plain: bool, specialists: Sequence[Mapping[str, Any]],
                   mcp: ConnectedServers) -> AssembledAgent:
        """The run's agent; for a binding that builds nothing per run, the one assembled for its first run, with a
        ledger of this run's own."""
        spec = binding.spec
        key = (binding.bot_name, binding.agent.name, binding.agent.version, spec.instructions)
        plain = plain and not PLACEHOLDER.search(spec.instructions) and not any(
            getattr(spec, grant, None) is not None for grant in self._capabilities.binding_only)
        kept = self._plain.get(key) if plain else None
        if kept is not None:
            return AssembledAgent(agent=kept.agent, policy=kept.policy)
        assembled = assemble(binding, capabilities=self._capabilities, models=self._models, run=run,
                             specialists=specialists, instrumentation=self._instrumentation, mcp=mcp)
        if plain:
            if len(self._plain) >= PLAIN_AGENTS:
                del self._plain[next(iter(self._plain))]
            self._plain[key] = assembled
        return assembled

    async def _stopped(self, run_id: int, reply: LiveReply, stop: TurnStopped, assembled: AssembledAgent | None,
                       outbox: RunOutbox | None) -> Stopped:
        """The text so far stays, marked as stopped; the run's row is left to the turn's end (`finish_stopped`). A
        turn whose item another worker holds now leaves the reply as it is, for that worker's attempt to edit."""
        if stop.lost:
            await reply.cancel()
            if assembled is not None:
                await _end(assembled)
            return Stopped(run_id=run_id, text=reply.shown_text, message_id=reply.message_id or "", by=stop.by)
        mark = INTERRUPTED if stop.interrupted else STOPPED.format(by=stop.by)
        shown = reply.shown_text.rstrip()
        text = f"{shown}\n\n{mark}" if shown else mark
        refs = await reply.finish(text)
        await _deliver(outbox)
        usage = assembled.delegated if assembled is not None else RunUsage()
        if assembled is not None:
            await _end(assembled)
        log.info("run %d stopped (%s)", run_id, "interrupted" if stop.interrupted else "asked")
        return Stopped(run_id=run_id, text=text, message_id=refs[0].message_id, by=stop.by,
                       interrupted=stop.interrupted, usage=usage)

    async def _failed(self, run_id: int, deps: TurnDeps, reply: LiveReply, exc: Exception,
                      assembled: AssembledAgent | None, *, before: RunUsage) -> Failed:
        """The chat gets a short notice, the run row the error, the log one line: an ERROR with the fix for a
        set-up the operator must correct, else a WARNING (a traceback only for what looks like a bug of ours); the
        turn is done, so the inbox does not retry it."""
        fix = setup_fix(exc)
        if fix is not None:
            log.error("run %d for bot %r failed: %s: %s; fix: %s", run_id, deps.binding.bot_name,
                      type(exc).__name__, exc, fix)
        else:
            log.warning("run %d for bot %r failed: %s: %s", run_id, deps.binding.bot_name, type(exc).__name__, exc,
                        exc_info=not isinstance(exc, EXPLAINED_FAILURES))
        refs = await reply.finish(failure_notice(exc))
        # What is known to be spent: a resumed run's spending before it parked, and its delegates'. The failed
        # request's own usage is lost with the exception.
        spent = before + assembled.delegated if assembled is not None else before
        usage = spent if spent.requests else None
        await self._set_run(run_id, status="failed", error=f"{type(exc).__name__}: {exc}", usage=usage)
        if assembled is not None:
            await _end(assembled)
        return Failed(run_id=run_id, error=str(exc), message_id=refs[0].message_id, usage=usage or RunUsage())

    async def _stream(self, assembled: AssembledAgent, deps: TurnDeps, reply: LiveReply, *,
                      signal: TurnSignal | None, prompt: str | Sequence[UserContent] | None = None,
                      history: list[ModelMessage] | None = None, conversation: Any = None,
                      results: DeferredToolResults | None = None) -> AgentRunResult[Any]:
        """The run in this task, its text streamed into `reply` by an event handler (`run_stream_events` would run it
        in a task of its own and hand each event over a channel: a task switch per event). A turn's run can be
        stopped (`signal`), and is handed the messages sent meanwhile as its binding's `while_busy` says."""
        shown = ""
        extra: list[AbstractCapability[Any]] = []
        if signal is not None:
            # Unset: steer in a direct message, where one person talks; queue in a group, where others may.
            mode = deps.binding.spec.while_busy or ("steer" if deps.address.is_direct else "queue")
            if mode == "steer" and self._control is not None:
                turn_signal = signal

                async def steer(messages: list[ModelMessage]) -> list[ModelMessage]:
                    return await self._steered(turn_signal, deps, messages)
                extra.append(ProcessHistory(steer))
            elif mode == "interrupt" and self._control is not None:
                signal.on_newer = lambda: self._interrupt(signal, deps)

        async def show(_ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
            nonlocal shown
            async for event in events:
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    shown = event.part.content
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    shown += event.delta.content_delta
                elif isinstance(event, FunctionToolCallEvent):
                    reply.calling(event.part.tool_name)
                    continue
                else:
                    continue
                reply.update(shown)

        reply.stoppable = signal is not None
        try:
            with signal.asking() if signal is not None else contextlib.nullcontext():
                return await assembled.agent.run(
                    prompt, message_history=history, conversation=conversation, deferred_tool_results=results,
                    deps=deps, usage_limits=UsageLimits(request_limit=REQUEST_LIMIT), event_stream_handler=show,
                    capabilities=extra or None)
        finally:
            reply.stoppable = False

    async def _steered(self, signal: TurnSignal, deps: TurnDeps, messages: list[ModelMessage]) -> list[ModelMessage]:
        """Before each model request of a `steer` turn: the messages sent since it began, in its next request."""
        if not (signal.newer or signal.retaking) or self._control is None:
            return messages
        again_only = not signal.newer
        signal.newer = signal.retaking = False
        taken = await self._control.take_waiting(signal.item_id, owner=signal.owner, binding=deps.binding,
                                                 known=signal.taken, again_only=again_only)
        if not taken:
            return messages
        group = not deps.address.is_direct
        parts = [UserPromptPart(speaker_line(inbound.speaker.display_name, inbound.text, group)) for inbound in taken]
        last = messages[-1] if messages else None
        if isinstance(last, ModelRequest):
            messages[-1] = replace(last, parts=[*last.parts, *parts])
        else:
            messages.append(ModelRequest(parts=parts))
        return messages

    def _interrupt(self, signal: TurnSignal, deps: TurnDeps) -> None:
        """A newer message under `while_busy: interrupt` stops the turn, once it is one its own turn would answer."""
        async def check() -> None:
            signal.newer = False
            if self._control is not None and await self._control.interrupts(signal.item_id, binding=deps.binding):
                signal.stop("a newer message", interrupted=True)
        task = asyncio.create_task(check(), name=f"interrupt {signal.item_id}")
        self._interrupts.add(task)
        task.add_done_callback(self._interrupts.discard)

    async def booked(self, run_id: int) -> Booked:
        """What the run's row books so far, and its turn's inbox item: for a run parked without them in its
        snapshot (`Booked.of_snapshot`)."""
        def work(connection: Connection) -> Booked:
            row = connection.execute(select(RUNS).where(RUNS.c.id == run_id)).first()
            if row is None:
                return Booked(usage=RunUsage(), inbox_id=None)
            return Booked(usage=RunUsage(requests=row.requests or 0, input_tokens=row.input_tokens or 0,
                                         output_tokens=row.output_tokens or 0, cost=row.cost_usd),
                          inbox_id=row.inbox_id)
        return await self._db.run(work, single=True)

    async def open_run(self, turn: Turn) -> int:
        return await self._db.run(lambda connection: open_run(connection, turn))

    async def _set_run(self, run_id: int, *, status: str, usage: RunUsage | None = None,
                       error: str | None = None) -> None:
        await self._db.run(lambda connection: set_run(connection, run_id, status=status, usage=usage, error=error))


_OPEN_RUN = insert(RUNS).returning(RUNS.c.id)
_SET_RUN = update(RUNS).where(RUNS.c.id == bindparam("run_id"))
"""Built once, its SET clause the columns each call gives: a statement built per call costs ~0.3 ms of CPU in
SQLAlchemy's construction and cache key, several times its execution."""


CUT_OFF = "cut off: the attempt running it ended before the run did (a restart, or its lease passed to another worker)"
"""An earlier attempt's run, closed by the attempt that takes its turn up again."""
_CLOSE_CUT_OFF = (update(RUNS).where(RUNS.c.inbox_id == bindparam("item"), RUNS.c.status == "running")
                  .values(status="failed", error=CUT_OFF, finished_at=bindparam("now")))


def close_cut_off(connection: Connection, inbox_id: int) -> None:
    """Close the run row an earlier attempt of inbox item `inbox_id` left running, in the caller's transaction."""
    connection.execute(_CLOSE_CUT_OFF, {"item": inbox_id, "now": utcnow()})


def open_run(connection: Connection, turn: Turn) -> int:
    """The run's row, status running, in the caller's transaction. A retried turn first closes the row an earlier
    attempt left running: that attempt will never end it (it died, or lost its lease and writes nothing more)."""
    if turn.retried and turn.inbox_id is not None:
        close_cut_off(connection, turn.inbox_id)
    binding = turn.deps.binding
    return int(connection.execute(_OPEN_RUN, {
        "conversation_id": turn.conversation_id, "inbox_id": turn.inbox_id, "bot_name": binding.bot_name,
        "agent_name": binding.agent.name, "agent_version": binding.agent.version, "model": binding.agent.spec.model,
        "identity_id": turn.identity_id, "status": "running", "started_at": utcnow()}).scalar_one())


def set_run(connection: Connection, run_id: int, *, status: str, usage: RunUsage | None = None,
            error: str | None = None) -> None:
    connection.execute(_SET_RUN, {"run_id": run_id, **_run_values(status, usage, error)})


def _run_values(status: str, usage: RunUsage | None, error: str | None) -> dict[str, object]:
    values: dict[str, object] = {"status": status, "error": error}
    if status != "running":
        values["finished_at"] = utcnow()
    if usage is not None:  # the run's whole spending so far: a resumed run's includes what it spent before parking
        values |= {"requests": usage.requests, "input_tokens": usage.input_tokens,
                   "output_tokens": usage.output_tokens, "cost_usd": usage.cost}
    return values


def record_answered(connection: Connection, outcome: Answered) -> None:
    """An answered run's row, in the caller's transaction (the turn's end), with its steps and first text's time."""
    connection.execute(_SET_RUN, {"run_id": outcome.run_id, **_run_values("answered", outcome.usage, None),
                                  "steps": list(outcome.steps), "first_shown_at": outcome.first_shown_at})


MAX_STEPS = 100
"""Steps kept of one run: a long tool loop keeps its first ones and says how many more there were."""


def run_steps(messages: Sequence[ModelMessage]) -> tuple[dict[str, str], ...]:
    """Each model response (with the tools it called) and each tool's return, when it happened: names only, never
    arguments or results, which may hold what only `transcripts` may read."""
    steps: list[dict[str, str]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            tools = [part.tool_name for part in message.parts if isinstance(part, ToolCallPart)]
            steps.append({"at": message.timestamp.isoformat(), "what": "model response",
                          "detail": f"{message.model_name or 'model'}" + (f" → {', '.join(tools)}" if tools else "")})
        else:
            steps += [{"at": part.timestamp.isoformat(), "what": "tool returned", "detail": part.tool_name}
                      for part in message.parts if isinstance(part, ToolReturnPart)]
    if len(steps) > MAX_STEPS:
        steps = [*steps[:MAX_STEPS], {"at": steps[-1]["at"], "what": "…",
                                       "detail": f"{len(steps) - MAX_STEPS} more step(s)"}]
    return tuple(steps)


def _wall(monotonic: float | None) -> datetime | None:
    """A `time.monotonic()` reading of this process, as the wall-clock time it was."""
    return None if monotonic is None else utcnow() - timedelta(seconds=time.monotonic() - monotonic)


async def _end(assembled: AssembledAgent) -> None:
    """The run's end for the capabilities built into it; none to tell for an agent that binds none."""
    if assembled.end_run.hooks:
        await assembled.end_run()


def _bound_ids(binding: Binding) -> set[str]:
    """The capabilities a run of `binding` may build: its agent's, every pinned delegate version's, its grants."""
    specs = [binding.agent.spec, *(version.spec for version in binding.delegate_versions.values())]
    return {entry.id for spec in specs for entry in spec.capabilities if entry.enabled}


async def _deliver(outbox: RunOutbox | None) -> int:
    """Post the run's files; returns how many were posted. A database fault here is logged, and the next delivery
    of the turn (or the outbox sweep) posts them."""
    if outbox is None:
        return 0
    try:
        return await outbox.deliver()
    except Exception as exc:
        log.warning("could not deliver the files of %s: %s: %s", outbox.key, type(exc).__name__, exc)
        return 0


def _waiting_on(requests: DeferredToolRequests, assembled: AssembledAgent,
                asked: Callable[[Any], AskedQuestion | None]) -> tuple[tuple[GatedCall, ...],
                                                                      tuple[DelegateQuestion, ...]]:
    """The parked calls, split into those a person approves and those waiting on a delegate's question."""
    calls: list[GatedCall] = []
    questions: list[DelegateQuestion] = []
    for call in requests.approvals:
        metadata = requests.metadata.get(call.tool_call_id)
        question = asked(metadata)
        if question is not None:
            questions.append(DelegateQuestion(tool_call_id=call.tool_call_id, specialist=question.asker,
                                              question=question.question, choices=question.choices))
            continue
        tool_id, tool_name, args = shown_call(call.tool_name, call.args_as_dict(), metadata)
        calls.append(GatedCall(tool_call_id=call.tool_call_id, tool_name=tool_name, args=args,
                               tool_id=tool_id or assembled.policy.stable_id(call.tool_name)))
    return tuple(calls), tuple(questions)


def shown_call(tool_name: str, args: dict[str, Any], metadata: Any) -> tuple[str | None, str, dict[str, Any]]:
    """The call a person is asked to approve. When the run parked inside a synchronous delegation, that is the
    delegate's own gated call (`capabilities/subagents/delegation.py` puts it in the metadata), not the `task` that
    reached it: approving resumes the delegate and runs exactly that call."""
    calls = objects_in(metadata.get("calls")) if is_object(metadata) else []
    if not is_object(metadata) or not calls:
        return None, tool_name, args
    delegate = str(metadata["delegate"])
    if len(calls) == 1:
        tool_id, inner_name, inner_args = shown_call(str(calls[0]["tool_name"]), dict(calls[0]["args"]),
                                                     calls[0].get("metadata"))
        return tool_id or str(calls[0]["tool_id"]), f"{delegate}: {inner_name}", inner_args
    return (str(calls[0]["tool_id"]), f"{delegate}: {', '.join(str(c['tool_name']) for c in calls)}",
            {str(c["tool_name"]): c["args"] for c in calls})


def deps_snapshot(deps: TurnDeps) -> dict[str, Any]:
    """The admitting turn's server-side facts, stored with a parked run so a resume uses the same ones: the agent
    version, and every delegate version its pins reach."""
    binding = deps.binding
    return {"address": asdict(deps.address), "speaker": asdict(deps.speaker),
            "owner": asdict(deps.owner) if deps.owner else None, "user_key": deps.user_key,
            "binding": {"bot_name": binding.bot_name, "spec": binding.spec.model_dump(mode="json"),
                        "agent": _definition_snapshot(binding.agent),
                        "delegate_versions": [_definition_snapshot(d) for d in binding.delegate_versions.values()]}}


def deps_from_snapshot(snapshot: Mapping[str, Any]) -> TurnDeps:
    stored = snapshot["binding"]
    versions = (_definition(d) for d in stored.get("delegate_versions", ()))
    binding = Binding(bot_name=stored["bot_name"], agent=_definition(stored["agent"]),
                      spec=BindingSpec.model_validate(stored["spec"]),
                      delegate_versions={(d.name, d.version): d for d in versions})
    owner = snapshot.get("owner")
    return TurnDeps(address=ChatAddress(**snapshot["address"]), speaker=Speaker(**snapshot["speaker"]),
                    binding=binding, owner=MemoryOwner(**owner) if owner else None,
                    user_key=snapshot.get("user_key"))


def _definition_snapshot(definition: AgentDefinition) -> dict[str, Any]:
    return {"name": definition.name, "version": definition.version, "spec": definition.spec.model_dump(mode="json"),
            "pins": dict(definition.pins)}


def _definition(stored: Mapping[str, Any]) -> AgentDefinition:
    return AgentDefinition(name=stored["name"], version=stored["version"],
                           spec=AgentSpec.model_validate(stored["spec"]), pins=stored.get("pins", {}))
