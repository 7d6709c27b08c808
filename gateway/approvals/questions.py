"""A question put to the person whose run it is, by the agent (`ask_person`) or a delegate: their next message there is
the answer, or, where options were offered, a click on one of the question's buttons (verified: that person, that
message, once)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.tools import DeferredToolApprovalResult
from sqlalchemy import ColumnElement, Connection

from adapters.base import ApprovalClick, ChatAddress, Inbound, MessageRef, QuestionCard
from adapters.protocols import AsksChoices, Chat
from capabilities.registry import AskedQuestion
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
from storage.tables import utcnow

log = logging.getLogger(__name__)


class QuestionFlow:
    """What a parked run waits on besides approvals (`gateway/approvals/parking.py` `Wait`): its delegates'
    questions."""

    def __init__(self, questions: DelegateQuestions, *, asked: Callable[[Any], AskedQuestion | None]) -> None:
        """`asked`: the question a parked call's metadata waits on, from the capability that asked it
        (`BoundRegistry.asked`)."""
        self._questions = questions
        self._asked = asked

    async def ask(self, adapter: Chat, deps: TurnDeps, parked_run_id: int, outcome: Parked) -> None:
        """Store the run's questions and put each to its person as a plain message in the conversation."""
        if not outcome.questions:
            return
        new = [NewQuestion(tool_call_id=q.tool_call_id, specialist=q.specialist, question=q.question,
                           choices=q.choices) for q in outcome.questions]
        questions = await self._questions.add(
            parked_run_id=parked_run_id, conversation_key=deps.address.conversation_key, questions=new,
            requester=deps.speaker, expires_at=utcnow() + deps.binding.spec.approvals.expires_after)
        for question in questions:
            if question.choices and isinstance(adapter, AsksChoices) \
                    and len(question.choices) <= adapter.choice_buttons:
                ref = await adapter.post_question(deps.address, QuestionCard(
                    question_id=str(question.id), text=question_text(question, buttons=True),
                    choices=question.choices))
            else:
                ref = await adapter.send(deps.address, question_text(question, buttons=False))
            await self._questions.attach_message(question.id, ref.message_id)
        log.info("run %d asks %d question(s) in %s", outcome.run_id, len(questions), deps.address.conversation_key)

    def still_open(self, parked_run_id: int) -> ColumnElement[bool]:
        return open_question(parked_run_id)

    async def results(self, parked_run_id: int, requests: DeferredToolRequests) -> DeferredToolResults:
        """Each asked call approved either way: the delegate continues in place, told the answer or that nobody
        gave one. A call that no longer asks what was shown is denied."""
        decisions: dict[str, DeferredToolApprovalResult | bool] = {}
        carried: dict[str, dict[str, Any]] = {}
        if not any(self._asked(requests.metadata.get(call.tool_call_id)) for call in requests.approvals):
            return DeferredToolResults()  # the run parked on approvals alone: it asked nothing to look up
        for question in await self._questions.of_run(parked_run_id):
            shown = self._asked(requests.metadata.get(question.tool_call_id))
            if shown is None or (shown.asker, shown.question) != (question.specialist, question.question):
                decisions[question.tool_call_id] = ToolDenied(CHANGED_RESULT)
                continue
            decisions[question.tool_call_id] = ToolApproved()
            carried[question.tool_call_id] = shown.answered(question.answer)
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

    async def take_answer(self, adapter: Chat, inbound: Inbound, *, retried: bool) -> TakenAnswer | None:
        """The requester's message answers the question a delegate of their parked run asked in this
        conversation (a number picks that option of a numbered list); the question's buttons, if any, go. Anyone
        else's message, or one with no open question, is left to be a turn of its own (None)."""
        key = inbound.address.conversation_key
        question = await self._questions.pending(key, inbound.speaker.platform_user_id)
        if question is not None:
            answered = await self._questions.answer(question.id, typed_answer(question, inbound.text),
                                                    inbound.speaker, inbound.message_id)
            if answered is not None:
                log.info("question %d answered by %s in %s", answered.id, inbound.speaker.platform_user_id, key)
                await self._close(adapter, answered, inbound.address)
                return TakenAnswer(parked_run_id=answered.parked_run_id, retried=False)
        if retried:  # answered before a crash: finish the resume it started
            answered = await self._questions.answered_with(key, inbound.message_id)
            if answered is not None:
                return TakenAnswer(parked_run_id=answered.parked_run_id, retried=True)
        return None


    async def take_choice(self, adapter: Chat, click: ApprovalClick, *, retried: bool) -> TakenAnswer | None:
        """A click on one of a question's options answers it, once: only on the question's own message, only by
        the person asked, only while it is open. Anyone else's click is refused and changes nothing; a click on a
        question answered already is told by whom (and, retried after a crash, finishes the resume it started)."""
        question = await self._questions.get(int(click.approval_id)) if click.approval_id.isdigit() else None
        if question is None or question.message_id != click.card.message_id \
                or question.conversation_key != click.card.address.conversation_key \
                or click.choice is None or not 0 <= click.choice < len(question.choices):
            log.warning("bot %r: click on an unknown or mismatched question refused", click.card.address.bot_id)
            await adapter.answer_click(click, "This button does not belong to an open question.", refused=True)
            return None
        if click.clicker.platform_user_id != question.requester_id:
            log.info("bot %r: %s may not answer question %d", click.card.address.bot_id,
                     click.clicker.platform_user_id, question.id)
            await adapter.answer_click(click, f"Only {question.requester_name} can answer this question.",
                                       refused=True)
            return None
        clicked = "click:" + hashlib.sha256(click.logical_id.encode()).hexdigest()[:40]  # a Mattermost trigger is long
        answered = await self._questions.answer(question.id, question.choices[click.choice], click.clicker, clicked)
        if answered is None:
            current = await self._questions.get(question.id) or question
            await self._close(adapter, current, click.card.address)
            await adapter.answer_click(click, settled_question(current), refused=True)
            return TakenAnswer(parked_run_id=current.parked_run_id, retried=True) if retried else None
        log.info("question %d answered by a click in %s", answered.id, answered.conversation_key)
        await self._close(adapter, answered, click.card.address)
        await adapter.answer_click(click, f"Answered: {answered.answer}")
        return TakenAnswer(parked_run_id=answered.parked_run_id, retried=False)

    @staticmethod
    async def _close(adapter: Chat, question: Question, address: ChatAddress) -> None:
        """The question's buttons go once it is answered or expired; a failed edit leaves them, and a later click
        on one is told the question is settled."""
        if not question.choices or question.message_id is None or question.status == "pending" \
                or not isinstance(adapter, AsksChoices):
            return
        ref = MessageRef(address=address, message_id=question.message_id)
        try:
            await adapter.close_question(ref, f"{question_text(question, buttons=False)}\n\n"
                                              f"{settled_question(question)}")
        except Exception as exc:
            log.warning("could not close question %d's buttons: %s", question.id, exc)


def question_text(question: Question, *, buttons: bool) -> str:
    """A question (the agent's, or a delegate's by name), put to the person whose run it is, in the conversation the
    run belongs to: with its options as buttons, or listed with numbers, or open."""
    asks = f"{question.requester_name}, " + (f"{question.specialist} asks: {question.question}" if question.specialist
                                             else question.question)
    if question.status != "pending":
        return asks
    if question.choices and buttons:
        return f"{asks}\n\nPick an option, or answer in your own words: your next message here is taken as the answer."
    if question.choices:
        listed = "\n".join(f"{number}. {choice}" for number, choice in enumerate(question.choices, 1))
        return (f"{asks}\n\n{listed}\n\nAnswer with a number, or in your own words: your next message here is "
                "taken as the answer.")
    return f"{asks}\n\nYour next message here is taken as the answer."


def typed_answer(question: Question, text: str) -> str:
    """A typed number picks that option of the question's; anything else is the answer as typed."""
    number = text.strip().rstrip(".")
    if question.choices and number.isdigit() and 1 <= int(number) <= len(question.choices):
        return question.choices[int(number) - 1]
    return text


def settled_question(question: Question) -> str:
    """What a closed question shows, and what a click on it is told."""
    if question.status != "answered":  # expired, or past its time before the sweep came
        return "Nobody answered in time."
    return f"Answered by {question.answered_by}: {question.answer}"
