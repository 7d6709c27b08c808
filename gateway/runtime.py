"""Builds a fresh pydantic-ai agent per turn from the agent spec and the binding, and runs it live."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pydantic_ai import (
    Agent,
    AgentRunResultEvent,
    ModelMessage,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    UsageLimits,
)
from pydantic_ai.exceptions import AgentRunError, ModelAPIError
from pydantic_ai.usage import RunUsage
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from adapters.base import ChatAddress, Speaker
from gateway.bindings import Binding
from gateway.live_reply import LiveReply
from gateway.model_profiles import ModelResolver
from storage.db import Database
from storage.models import RunRow, utcnow

log = logging.getLogger(__name__)

REQUEST_LIMIT = 25


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnDeps:
    """What the server decided for this run; tools read it, the model never chooses it."""

    address: ChatAddress
    speaker: Speaker
    binding: Binding


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    deps: TurnDeps
    prompt: str
    history: list[ModelMessage]
    conversation_id: int
    identity_id: int
    inbox_id: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Answered:
    run_id: int
    text: str
    message_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Failed:
    run_id: int
    error: str
    message_id: str


RunOutcome = Answered | Failed


class Runtime:
    def __init__(self, *, models: ModelResolver, db: Database) -> None:
        self._models = models
        self._db = db

    def build_agent(self, binding: Binding) -> Agent[TurnDeps, str]:
        spec = binding.agent.spec
        instructions = [text for text in (spec.instructions, binding.spec.instructions) if text.strip()]
        return Agent(self._models.resolve(spec.model), deps_type=TurnDeps, output_type=str,
                     instructions=instructions or None, name=spec.name)

    async def run(self, turn: Turn, reply: LiveReply) -> RunOutcome:
        binding = turn.deps.binding
        run_id = await self._open_run(turn)
        await reply.start()
        try:
            text, usage = await self._stream(turn, reply)
        except Exception as exc:  # whatever failed, the chat gets a short notice instead of silence
            log.warning("run %d for bot %r failed: %s: %s", run_id, binding.bot_name, type(exc).__name__, exc,
                        exc_info=not isinstance(exc, AgentRunError | ModelAPIError))
            refs = await reply.finish(failure_notice(exc))
            await self._close_run(run_id, status="failed", usage=None, error=f"{type(exc).__name__}: {exc}")
            return Failed(run_id=run_id, error=str(exc), message_id=refs[0].message_id)
        refs = await reply.finish(text)
        await self._close_run(run_id, status="answered", usage=usage, error=None)
        return Answered(run_id=run_id, text=text, message_id=refs[0].message_id)

    async def _stream(self, turn: Turn, reply: LiveReply) -> tuple[str, RunUsage]:
        agent = self.build_agent(turn.deps.binding)
        shown = ""
        async with agent.run_stream_events(turn.prompt, message_history=turn.history, deps=turn.deps,
                                           usage_limits=UsageLimits(request_limit=REQUEST_LIMIT)) as events:
            async for event in events:
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    shown = event.part.content
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    shown += event.delta.content_delta
                elif isinstance(event, AgentRunResultEvent):
                    return event.result.output, event.result.usage
                else:
                    continue
                reply.update(shown)
        raise AgentRunError("the model stream ended without a result")

    async def _open_run(self, turn: Turn) -> int:
        binding = turn.deps.binding
        row = RunRow(conversation_id=turn.conversation_id, inbox_id=turn.inbox_id, bot_name=binding.bot_name,
                     agent_name=binding.agent.name, agent_version=binding.agent.version,
                     model=binding.agent.spec.model, identity_id=turn.identity_id, status="running")

        async def work(session: AsyncSession) -> int:
            session.add(row)
            await session.flush()
            return row.id
        return await self._db.transaction(work)

    async def _close_run(self, run_id: int, *, status: str, usage: RunUsage | None, error: str | None) -> None:
        values: dict[str, object] = {"status": status, "error": error, "finished_at": utcnow()}
        if usage is not None:
            values |= {"requests": usage.requests, "input_tokens": usage.input_tokens,
                       "output_tokens": usage.output_tokens}

        async def work(session: AsyncSession) -> None:
            await session.execute(update(RunRow).where(RunRow.id == run_id).values(**values))
        await self._db.transaction(work)


def failure_notice(exc: BaseException) -> str:
    """A short reply for the chat: what went wrong, without internals or secrets."""
    if isinstance(exc, ModelAPIError):
        return f"Sorry, the model could not answer right now ({type(exc).__name__}). Please try again in a moment."
    if isinstance(exc, TimeoutError):
        return "Sorry, the model took too long to answer. Please try again."
    return "Sorry, something went wrong while answering. Please try again in a moment."
