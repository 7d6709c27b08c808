"""What the steps are built from, once, at start: the gateway's stores and flows, and the seams to parked runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import Connection

from adapters.base import ApprovalClick, Inbound, Speaker
from adapters.protocols import Chat
from capabilities.registry import BoundRegistry
from gateway.people.commands import DirectCommands
from gateway.pipeline.conversations import Conversations
from gateway.pipeline.inbox import Inbox
from gateway.pipeline.intake import TypingShown
from gateway.pipeline.metrics import GatewayMetrics
from gateway.pipeline.operator_decisions import OperatorDecision
from gateway.pipeline.runtime import Parked, RunOutcome, Runtime, TurnDeps
from gateway.pipeline.steps.step import Delivery
from gateway.pipeline.turn_control import StopAnswer, TurnControl
from gateway.pipeline.worker import Finish
from storage.cache import Cache
from storage.db import Database


@dataclass(frozen=True, slots=True, kw_only=True)
class TakenAnswer:
    """A message that answered an open question: the parked run it belongs to resumes."""

    parked_run_id: int
    retried: bool
    """The message was taken before a crash: the resume it started may be left half done."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoppedWaiting:
    """`stop` said while the conversation's run waits on approvals: what the person is told, and the resume's end
    (the run goes on with its calls denied), committed with the stop's inbox item."""

    answer: StopAnswer
    """Told already (`tell`) when the run resumed."""
    finish: Finish | None = None


class ParkedRuns(Protocol):
    """Where a run waiting on people goes, and how it comes back (`gateway/approvals/parking.py`). A resume's
    last writes come back as a `Finish`, committed with the inbox item that caused it."""

    async def park(self, adapter: Chat, deps: TurnDeps, conversation_id: int, outcome: Parked, *,
                   inbox_id: int | None) -> Finish | None:
        """`inbox_id`: the item of the turn that parked, whose outbox key the resume goes on with. A run that needs no
        card (its calls were approved for the conversation) resumes at once: its end comes back as a `Finish`."""
        ...

    async def on_click(self, adapter: Chat, click: ApprovalClick, *, retried: bool) -> Finish | None: ...

    async def on_operator_decision(self, adapter: Chat, decision: OperatorDecision, *,
                                   retried: bool) -> Finish | None:
        """A console operator's decision, taken from the inbox as a click is."""
        ...

    async def resume(self, adapter: Chat, parked_run_id: int, *, reclaim: bool = False) -> Finish | None: ...

    async def stop(self, adapter: Chat, conversation_key: str, stopper: Speaker,
                   tell: Callable[[str], Awaitable[object]]) -> StoppedWaiting | None:
        """Deny the conversation's pending approvals, as a Deny click would, when `stopper` may stop its run (who
        asked, or who may decide the calls), `tell` them so, then resume the run; None: nothing waits there."""
        ...


class OpenQuestions(Protocol):
    """Delegates' questions put to people (`gateway/approvals/questions.py`)."""

    def may_take(self, connection: Connection, inbound: Inbound, *, retried: bool) -> bool:
        """Whether `take_answer` could find anything for this message (reads only, in the claim's transaction)."""
        ...

    async def take_answer(self, adapter: Chat, inbound: Inbound, *, retried: bool) -> TakenAnswer | None:
        """The parked run a message answers the open question of, or None: the message is a turn of its own."""
        ...

    async def take_choice(self, adapter: Chat, click: ApprovalClick, *, retried: bool) -> TakenAnswer | None:
        """The parked run a verified click on a question's option answers, or None: the click was refused or came
        late (the clicker is told either way)."""
        ...


class Account(Protocol):
    def __call__(self, delivery: Delivery, outcome: RunOutcome, *, started: float, posted_at: float | None) -> None:
        """A model run's metrics and its one log line (`Router`)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class StepServices:
    """Everything a step may be built from; each step takes what it uses."""

    db: Database
    cache: Cache
    inbox: Inbox
    capabilities: BoundRegistry
    """The capabilities this deployment binds: what a step asks of an agent's declarations (`asks_in_chat`)."""
    conversations: Conversations
    commands: DirectCommands
    runtime: Runtime
    parked: ParkedRuns
    questions: OpenQuestions
    metrics: GatewayMetrics
    typing: TypingShown
    """What `Intake` showed typing in; a turn's first post clears it there."""
    account: Account
    control: TurnControl
    """Stops a conversation's running turn, wherever it runs (`stop`)."""
