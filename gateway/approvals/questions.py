"""A delegate's question put to the person whose run it is, and their next message there taken as the answer."""

from __future__ import annotations

import logging
from typing import Any

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.tools import DeferredToolApprovalResult
from sqlalchemy import ColumnElement, Connection

from adapters.base import Inbound
from adapters.protocols import Chat
from capabilities.subagents.questions import asked, with_answer
from gateway.approvals.parking import CHANGED_RESULT
from gateway.approvals.question_store import (
    DelegateQuestions,
    NewQuestion,
    Question,
    answered_question,
    open_question,
    pending_question,
)
from gateway.pipeline.runtime import Parked, TurnDeps
from gateway.pipeline.steps.services import TakenAnswer
from storage.models import utcnow

log = logging.getLogger(__name__)


class QuestionFlow:
    """What a parked run waits on besides approvals (`gateway/approvals/parking.py` `Wait`): its delegates'
    questions."""

    def __init__(self, questions: DelegateQuestions) -> None:
        self._questions = questions

    async def ask(self, adapter: Chat, deps: TurnDeps, parked_run_id: int, outcome: Parked) -> None:
        """Store the run's questions and put each to its person as a plain message in the conversation."""
        if not outcome.questions:
            return
        new = [NewQuestion(tool_call_id=q.tool_call_id, specialist=q.specialist, question=q.question)
               for q in outcome.questions]
        questions = await self._questions.add(
            parked_run_id=parked_run_id, conversation_key=deps.address.conversation_key, questions=new,
            requester=deps.speaker, expires_at=utcnow() + deps.binding.spec.approvals.expires_after)
        for question in questions:
            ref = await adapter.send(deps.address, question_text(question))
            await self._questions.attach_message(question.id, ref.message_id)
        log.info("run %d asks %d question(s) in %s", outcome.run_id, len(questions), deps.address.conversation_key)

    def still_open(self, parked_run_id: int) -> ColumnElement[bool]:
        return open_question(parked_run_id)

    async def results(self, parked_run_id: int, requests: DeferredToolRequests) -> DeferredToolResults:
        """Each asked call approved either way: the delegate continues in place, told the answer or that nobody
        gave one. A call that no longer asks what was shown is denied."""
        decisions: dict[str, DeferredToolApprovalResult | bool] = {}
        carried: dict[str, dict[str, Any]] = {}
        if not any(asked(requests.metadata.get(call.tool_call_id)) for call in requests.approvals):
            return DeferredToolResults()  # the run parked on approvals alone: it asked nothing to look up
        for question in await self._questions.of_run(parked_run_id):
            metadata = requests.metadata.get(question.tool_call_id)
            if metadata is None or asked(metadata) != (question.specialist, question.question):
                decisions[question.tool_call_id] = ToolDenied(CHANGED_RESULT)
                continue
            decisions[question.tool_call_id] = ToolApproved()
            carried[question.tool_call_id] = with_answer(metadata, question.answer)
        return DeferredToolResults(approvals=decisions, metadata=carried)

    async def expire_due(self) -> list[int]:
        """Expire every question nobody answered in time; returns their parked runs, to resume."""
        expired = await self._questions.expire_due()
        return sorted({question.parked_run_id for question in expired})

    def may_take(self, connection: Connection, inbound: Inbound, *, retried: bool) -> bool:
        """Whether `take_answer` could find anything: an open question to this person here, or (a retry) one this
        message answered already. Reads only, in the caller's transaction (the claim's)."""
        key = inbound.address.conversation_key
        if pending_question(connection, key, inbound.speaker.platform_user_id) is not None:
            return True
        return retried and answered_question(connection, key, inbound.message_id) is not None

    async def take_answer(self, inbound: Inbound, *, retried: bool) -> TakenAnswer | None:
        """The requester's message answers the question a delegate of their parked run asked in this
        conversation. Anyone else's message, or one with no open question, is left to be a turn of its own
        (None)."""
        key = inbound.address.conversation_key
        question = await self._questions.pending(key, inbound.speaker.platform_user_id)
        if question is not None:
            answered = await self._questions.answer(question.id, inbound.text, inbound.speaker, inbound.message_id)
            if answered is not None:
                log.info("question %d answered by %s in %s", answered.id, inbound.speaker.platform_user_id, key)
                return TakenAnswer(parked_run_id=answered.parked_run_id, retried=False)
        if retried:  # answered before a crash: finish the resume it started
            answered = await self._questions.answered_with(key, inbound.message_id)
            if answered is not None:
                return TakenAnswer(parked_run_id=answered.parked_run_id, retried=True)
        return None


def question_text(question: Question) -> str:
    """A delegate's question, put to the person whose run it is, in the conversation the run belongs to."""
    return (f"{question.requester_name}, {question.specialist} asks: {question.question}\n\n"
            "Your next message here is taken as the answer.")
