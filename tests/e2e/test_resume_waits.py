"""A parked run resumes only once nothing of it is open: its approvals decided and its delegates' questions answered,
judged in the resume's one claiming statement."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from adapters.base import Speaker
from capabilities import default_registry
from capabilities.registry import BoundRegistry
from gateway.agents.models import ModelResolver
from gateway.approvals.parking import ApprovalFlow
from gateway.approvals.question_store import DelegateQuestions, NewQuestion
from gateway.approvals.questions import QuestionFlow
from gateway.approvals.store import Approvals
from gateway.config.schema import ApprovalPolicy
from gateway.config.secrets import SecretSource
from gateway.pipeline.runtime import Runtime
from storage.db import Database
from storage.models import ConversationRow, ParkedRunRow, RunRow, utcnow

ALICE = Speaker(platform="telegram", platform_user_id="1001", display_name="Alice")


async def parked_run(db: Database) -> int:
    async with db.session() as session:
        conversation = ConversationRow(key="telegram:helper:42", bot_name="helper", platform="telegram",
                                       channel_id="42", thread_id=None, is_direct=True)
        session.add(conversation)
        await session.flush()
        run = RunRow(conversation_id=conversation.id, bot_name="helper", agent_name="assistant", agent_version=1,
                     model="test", status="parked")
        session.add(run)
        await session.flush()
        run_id, conversation_id = run.id, conversation.id
    parked_run_id, _approvals = await Approvals(db).park(
        run_id=run_id, conversation_id=conversation_id, conversation_key="telegram:helper:42", bot_name="helper",
        turn={}, state="{}", calls=[], requester=ALICE, policy=ApprovalPolicy())
    return parked_run_id


async def status(db: Database, parked_run_id: int) -> str:
    async with db.session() as session:
        return (await session.execute(select(ParkedRunRow.status).where(ParkedRunRow.id == parked_run_id))).scalar_one()


async def test_a_run_with_an_open_question_is_not_claimed_until_it_is_answered(db: Database) -> None:
    parked_run_id = await parked_run(db)
    questions = DelegateQuestions(db)
    [question] = await questions.add(parked_run_id=parked_run_id, conversation_key="telegram:helper:42",
                                     questions=[NewQuestion(tool_call_id="c1", specialist="researcher",
                                                            question="Which region?")],
                                     requester=ALICE, expires_at=utcnow() + timedelta(hours=1))
    approvals = Approvals(db)
    registry = default_registry()
    bound = BoundRegistry(registry, {}, secrets=None)
    runtime = Runtime(models=ModelResolver({}, SecretSource(environ={})), db=db, capabilities=bound)
    wait = QuestionFlow(questions, asked=bound.asked)
    flow = ApprovalFlow(approvals=approvals, runtime=runtime, adapters={}, waits=[wait])
    # no adapter: a run that is not claimed posts nothing
    assert await flow.resume(adapter=None, parked_run_id=parked_run_id) is None  # type: ignore[arg-type]
    assert await status(db, parked_run_id) == "parked"
    await questions.answer(question.id, "eu-west", ALICE, "m2")
    claimed = await approvals.claim_resume(parked_run_id, unless=[wait.still_open(parked_run_id)])
    assert claimed is not None and claimed.id == parked_run_id
