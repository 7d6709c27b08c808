"""From a parked run to buttons in the chat, and from a verified click back to the same thread."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pydantic_ai import ConversationTypeAdapter, DeferredToolResults, ToolApproved, ToolDenied

from adapters.base import ApprovalClick, ApprovalOutcome, Inbound, MessageRef
from adapters.protocols import Chat
from capabilities.subagents.questions import with_answer
from gateway.approvals.store import Approval, Approvals, NewCall, ParkedRun, args_hash, refusal
from gateway.people.conversations import Conversations
from gateway.pipeline.live_reply import LiveReply
from gateway.pipeline.runtime import (
    QUESTION,
    Answered,
    Parked,
    RunOutcome,
    Runtime,
    TurnDeps,
    deps_from_snapshot,
    deps_snapshot,
    shown_call,
)
from storage.models import utcnow

log = logging.getLogger(__name__)

EXPIRED_RESULT = "Nobody approved this call before it expired, so it was not run."


class ApprovalFlow:
    def __init__(self, *, approvals: Approvals, runtime: Runtime, conversations: Conversations,
                 adapters: Mapping[str, Chat]) -> None:
        self._approvals = approvals
        self._runtime = runtime
        self._conversations = conversations
        self._adapters = adapters

    async def settle(self, adapter: Chat, deps: TurnDeps, conversation_id: int, outcome: RunOutcome) -> None:
        """Record an answer, or park the run and post one card per gated call."""
        if isinstance(outcome, Answered):
            await self._conversations.record_answer(conversation_id, run_id=outcome.run_id, text=outcome.text,
                                                    speaker_name=deps.binding.agent.name,
                                                    platform_message_id=outcome.message_id)
        elif isinstance(outcome, Parked):
            await self._park(adapter, deps, conversation_id, outcome)

    async def _park(self, adapter: Chat, deps: TurnDeps, conversation_id: int, outcome: Parked) -> None:
        calls = [NewCall(tool_call_id=c.tool_call_id, tool_id=c.tool_id, tool_name=c.tool_name, args=c.args)
                 for c in outcome.calls]
        approvals = await self._approvals.park(
            run_id=outcome.run_id, conversation_id=conversation_id, conversation_key=deps.address.conversation_key,
            bot_name=deps.binding.bot_name, turn=parked_snapshot(deps, outcome), state=outcome.state, calls=calls,
            requester=deps.speaker, policy=deps.binding.spec.approvals)
        for approval in approvals:
            if approval.tool_id == QUESTION:  # a delegate's question: a plain message the requester answers
                ref = await adapter.send(deps.address, question_text(approval))
            else:
                ref = await adapter.post_approval(deps.address, approval.card)
            await self._approvals.attach_card(approval.id, ref.message_id)
        log.info("run %d parked for %d approval(s) in %s", outcome.run_id, len(approvals),
                 deps.address.conversation_key)

    async def on_click(self, adapter: Chat, click: ApprovalClick, *, retried: bool) -> None:
        approval = await self._approvals.get(click.approval_id)
        if approval is None or approval.card_message_id != click.card.message_id or approval.tool_id == QUESTION \
                or approval.conversation_key != click.card.address.conversation_key:
            log.warning("bot %r: click on an unknown or mismatched approval card refused", click.card.address.bot_id)
            await adapter.answer_click(click, "This button does not belong to a pending approval.", refused=True)
            return
        if approval.status != "pending":
            if approval.card_closed_at is None:  # its earlier edit failed: the card must stop offering buttons
                await self._close_card(adapter, click.card, approval)
            await adapter.answer_click(click, f"Already {approval.status}.", refused=True)
            if retried:
                await self._resume_if_ready(adapter, approval.parked_run_id, reclaim=True)
            return
        reason = refusal(approval, click.clicker)
        if reason is not None:
            log.info("bot %r: %s may not decide approval %s", click.card.address.bot_id, click.clicker.platform_user_id,
                     approval.id)
            await adapter.answer_click(click, reason, refused=True)
            return
        await self._decide(adapter, click, approval)

    async def _decide(self, adapter: Chat, click: ApprovalClick, approval: Approval) -> None:
        name = click.clicker.display_name
        if click.verb == "approve" and approval.policy.required_approvals > 1:
            votes = await self._approvals.vote(approval.id, click.clicker)
            if votes < approval.policy.required_approvals:
                await adapter.answer_click(click, f"Your approval is recorded ({votes} of "
                                                  f"{approval.policy.required_approvals}).")
                return
        verdict = "approved" if click.verb == "approve" else "denied"
        decided = await self._approvals.decide(approval.id, verdict, name)
        if decided is None:
            current = await self._approvals.get(approval.id)
            status = current.status if current and current.status != "pending" else "expired"
            await adapter.answer_click(click, f"Already {status}.", refused=True)
            return
        await self._close_card(adapter, click.card, decided)
        await adapter.answer_click(click, f"{verdict.capitalize()}.")
        await self._resume_if_ready(adapter, decided.parked_run_id)

    async def take_answer(self, adapter: Chat, inbound: Inbound, *, retried: bool) -> bool:
        """The requester's message answers the question a delegate of their parked run asked in this
        conversation: the run resumes with it, and True says it was no new turn. Anyone else's message,
        or one with no open question, is left to be a turn of its own (False)."""
        key = inbound.address.conversation_key
        question = await self._approvals.pending_question(key, inbound.speaker.platform_user_id, tool_id=QUESTION)
        answered = None
        if question is not None:
            answered = await self._approvals.answer(question.id, inbound.text, inbound.speaker, inbound.message_id)
        if answered is None and retried:  # answered before a crash: finish the resume it started
            answered = await self._approvals.answered_with(key, inbound.message_id, tool_id=QUESTION)
            if answered is not None:
                await self._resume_if_ready(adapter, answered.parked_run_id, reclaim=True)
                return True
        if answered is None:
            return False
        log.info("question %s answered by %s in %s", answered.id, inbound.speaker.platform_user_id, key)
        await self._resume_if_ready(adapter, answered.parked_run_id)
        return True

    async def expire_due(self) -> int:
        """Deny every call nobody decided in time, say so on its card, and resume its run."""
        expired = 0
        for approval_id in await self._approvals.due_for_expiry():
            decided = await self._approvals.decide(approval_id, "expired", None)
            if decided is None:
                continue
            expired += 1
            parked = await self._approvals.parked(decided.parked_run_id)
            adapter = self._adapters.get(parked.bot_name)
            if adapter is None:
                log.warning("approval %s expired for bot %r, which this gateway does not run", approval_id,
                            parked.bot_name)
                continue
            if decided.card_message_id and decided.tool_id != QUESTION:
                address = deps_from_snapshot(parked.turn).address
                await self._close_card(adapter, MessageRef(address=address, message_id=decided.card_message_id),
                                       decided)
            await self._resume_if_ready(adapter, decided.parked_run_id)
        return expired

    async def _resume_if_ready(self, adapter: Chat, parked_run_id: int, *, reclaim: bool = False) -> None:
        parked = await self._approvals.claim_resume(parked_run_id, reclaim=reclaim)
        if parked is None:
            return
        deps = deps_from_snapshot(parked.turn)
        results = _results(parked, await self._approvals.of_run(parked_run_id))
        log.info("resuming run %d in %s", parked.run_id, deps.address.conversation_key)
        reply = LiveReply(adapter, deps.address)
        outcome = await self._runtime.resume(parked.run_id, deps, parked.state, results, reply,
                                             specialists=parked.turn.get("specialists") or ())
        await self._approvals.mark_resumed(parked_run_id)
        await self.settle(adapter, deps, parked.conversation_id, outcome)

    async def _close_card(self, adapter: Chat, card: MessageRef, decided: Approval) -> None:
        outcome = ApprovalOutcome(card=decided.card, verdict=decided.status,  # type: ignore[arg-type]
                                  decided_by=decided.decided_by, decided_at=decided.decided_at or utcnow())
        try:
            await adapter.close_approval(card, outcome)
        except Exception as exc:  # the decision stands; the next click on this card edits it again
            log.warning("could not update approval card %s: %s", decided.id, exc)
            return
        await self._approvals.mark_card_closed(decided.id)


def parked_snapshot(deps: TurnDeps, outcome: Parked) -> dict[str, object]:
    """The admitting turn's facts and the specialists the model wrote before the park (#175): a resume, on
    any replica, registers them again (`Delegation._restore_specialists`)."""
    snapshot: dict[str, object] = deps_snapshot(deps)
    if outcome.specialists:
        snapshot["specialists"] = [dict(specialist) for specialist in outcome.specialists]
    return snapshot


def _results(parked: ParkedRun, approvals: list[Approval]) -> DeferredToolResults:
    """Each decision bound to the arguments that were shown: a changed call is denied, never run."""
    pending = ConversationTypeAdapter.validate_json(parked.state).deferred_tool_requests
    metadata = pending.metadata if pending else {}
    shown = {call.tool_call_id: args_hash(shown_call(call.tool_name, call.args_as_dict(),
                                                     metadata.get(call.tool_call_id))[2])
             for call in (pending.approvals if pending else [])}
    decisions: dict[str, ToolApproved | ToolDenied] = {}
    carried: dict[str, object] = {}
    for approval in approvals:
        if approval.tool_id == QUESTION and shown.get(approval.tool_call_id) == approval.args_hash:
            # approved either way: the delegate continues in place, told the answer or that nobody gave one
            answer = approval.args.get("answer") if approval.status == "answered" else None
            decisions[approval.tool_call_id] = ToolApproved()
            carried[approval.tool_call_id] = with_answer(metadata[approval.tool_call_id], answer)
        elif shown.get(approval.tool_call_id) != approval.args_hash:
            decisions[approval.tool_call_id] = ToolDenied("The call changed after it was shown; it was not run.")
        elif approval.status == "approved":
            decisions[approval.tool_call_id] = ToolApproved()
            if approval.tool_call_id in metadata:  # a delegate's state, to resume it where it stopped
                carried[approval.tool_call_id] = metadata[approval.tool_call_id]
        elif approval.status == "denied":
            decisions[approval.tool_call_id] = ToolDenied(f"{approval.decided_by} denied this call; it was not run.")
        else:
            decisions[approval.tool_call_id] = ToolDenied(EXPIRED_RESULT)
    return DeferredToolResults(approvals=decisions, metadata=carried)


def question_text(approval: Approval) -> str:
    """A delegate's question, put to the person whose run it is, in the conversation the run belongs to."""
    return (f"{approval.requester_name}, {approval.args.get('specialist')} asks: {approval.args.get('question')}\n\n"
            "Your next message here is taken as the answer.")
