"""Delegate questions asked before their table existed stay answerable across the upgrade, and the downgrade."""

from __future__ import annotations

from datetime import timedelta

from alembic import command
from sqlalchemy import Table, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.migrate import alembic_config, upgrade
from storage.models import ApprovalRow, DelegateQuestionRow
from storage.tables import APPROVALS, CONVERSATIONS, PARKED_RUNS, RUNS, utcnow


def _approval(row_id: str, parked_run_id: int, tool_id: str, args: dict[str, object]) -> dict[str, object]:
    """An approval as of 0003, by the columns it had then (the model has grown since)."""
    return dict(id=row_id, parked_run_id=parked_run_id, conversation_key="tg:1:42",
                tool_call_id=f"{row_id}-call", tool_id=tool_id, tool_name=tool_id, args=args, args_hash="h",
                requester_id="1001", requester_name="Alice", policy={}, status="pending",
                expires_at=utcnow() + timedelta(hours=1), card_message_id="77", created_at=utcnow())


async def _inserted(session: AsyncSession, table: Table, **values: object) -> int:
    inserted = await session.execute(insert(table).values(**values))
    return inserted.inserted_primary_key[0]


async def test_questions_move_to_their_own_table_and_back(database_url: str) -> None:
    db = Database(database_url)
    try:
        await upgrade(db, "0003")
        async with db.session() as session:
            # Rows as of 0003, each by the columns its table had then: Core inserts name only these (the models
            # have grown since).
            conversation_id = await _inserted(session, CONVERSATIONS, key="tg:1:42", bot_name="helper",
                                              platform="telegram", channel_id="42", thread_id=None, is_direct=True)
            run_id = await _inserted(session, RUNS, conversation_id=conversation_id, bot_name="helper",
                                     agent_name="assistant", agent_version=1, model="test", status="parked")
            parked_id = await _inserted(session, PARKED_RUNS, run_id=run_id, conversation_id=conversation_id,
                                        bot_name="helper", turn={}, state="{}", status="parked")
            await session.execute(insert(APPROVALS), [
                _approval("q1", parked_id, "ask_parent", {"specialist": "researcher", "question": "Which region?"}),
                _approval("a1", parked_id, "deploy_service", {"service": "web"})])
        await upgrade(db)
        async with db.session() as session:
            tools = (await session.execute(select(ApprovalRow.tool_id))).scalars().all()
            [question] = (await session.execute(select(DelegateQuestionRow))).scalars().all()
        assert tools == ["deploy_service"]
        assert (question.specialist, question.question, question.status, question.message_id) == (
            "researcher", "Which region?", "pending", "77")
        async with db.engine.begin() as conn:
            await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), "0003"))
        async with db.session() as session:
            rows = (await session.execute(select(ApprovalRow.tool_id, ApprovalRow.args)
                                          .order_by(ApprovalRow.tool_id))).all()
        assert [(tool, args.get("question")) for tool, args in rows] == [
            ("ask_parent", "Which region?"), ("deploy_service", None)]
    finally:
        await db.close()
