"""delegate questions in a table of their own

Revision ID: 0004
Revises: 0003

Questions used to be approval rows with the tool id `ask_parent`; the upgrade moves them over (open ones stay
answerable across it), and the downgrade moves them back.
"""

from __future__ import annotations

import hashlib
import json
import secrets

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

ASK_PARENT = 'ask_parent'
_approvals = sa.table(
    'approvals', sa.column('id', sa.String), sa.column('parked_run_id', sa.Integer),
    sa.column('conversation_key', sa.String), sa.column('tool_call_id', sa.String), sa.column('tool_id', sa.String),
    sa.column('tool_name', sa.String), sa.column('args', sa.JSON), sa.column('args_hash', sa.String),
    sa.column('requester_id', sa.String), sa.column('requester_name', sa.String), sa.column('policy', sa.JSON),
    sa.column('status', sa.String), sa.column('decided_by', sa.String),
    sa.column('decided_at', storage.models.UTCDateTime(timezone=True)),
    sa.column('expires_at', storage.models.UTCDateTime(timezone=True)), sa.column('card_message_id', sa.String),
    sa.column('created_at', storage.models.UTCDateTime(timezone=True)))
_questions = sa.table(
    'delegate_questions', sa.column('parked_run_id', sa.Integer), sa.column('conversation_key', sa.String),
    sa.column('tool_call_id', sa.String), sa.column('specialist', sa.String), sa.column('question', sa.Text),
    sa.column('requester_id', sa.String), sa.column('requester_name', sa.String), sa.column('status', sa.String),
    sa.column('answer', sa.Text), sa.column('answer_message_id', sa.String), sa.column('answered_by', sa.String),
    sa.column('answered_at', storage.models.UTCDateTime(timezone=True)),
    sa.column('expires_at', storage.models.UTCDateTime(timezone=True)), sa.column('message_id', sa.String),
    sa.column('created_at', storage.models.UTCDateTime(timezone=True)))


def upgrade() -> None:
    op.create_table('delegate_questions',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('parked_run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('conversation_key', sa.String(length=512), nullable=False),
    sa.Column('tool_call_id', sa.String(length=128), nullable=False),
    sa.Column('specialist', sa.String(length=128), nullable=False),
    sa.Column('question', sa.Text(), nullable=False),
    sa.Column('requester_id', sa.String(length=128), nullable=False),
    sa.Column('requester_name', sa.String(length=256), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('answer', sa.Text(), nullable=True),
    sa.Column('answer_message_id', sa.String(length=128), nullable=True),
    sa.Column('answered_by', sa.String(length=256), nullable=True),
    sa.Column('answered_at', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('expires_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('message_id', sa.String(length=128), nullable=True),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['parked_run_id'], ['parked_runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('delegate_questions', schema=None) as batch_op:
        batch_op.create_index('ix_delegate_questions_expiry', ['status', 'expires_at'], unique=False)
        batch_op.create_index('ix_delegate_questions_open', ['conversation_key', 'requester_id', 'status'],
                              unique=False)
        batch_op.create_index(batch_op.f('ix_delegate_questions_parked_run_id'), ['parked_run_id'], unique=False)

    connection = op.get_bind()
    rows = connection.execute(sa.select(_approvals).where(_approvals.c.tool_id == ASK_PARENT)).mappings().all()
    if rows:
        connection.execute(_questions.insert(), [{
            'parked_run_id': row['parked_run_id'], 'conversation_key': row['conversation_key'],
            'tool_call_id': row['tool_call_id'], 'specialist': str(row['args'].get('specialist', '')),
            'question': str(row['args'].get('question', '')), 'requester_id': row['requester_id'],
            'requester_name': row['requester_name'], 'status': row['status'], 'answer': row['args'].get('answer'),
            'answer_message_id': row['args'].get('answer_message_id'), 'answered_by': row['decided_by'],
            'answered_at': row['decided_at'], 'expires_at': row['expires_at'], 'message_id': row['card_message_id'],
            'created_at': row['created_at']} for row in rows])
        connection.execute(sa.delete(_approvals).where(_approvals.c.tool_id == ASK_PARENT))


def downgrade() -> None:
    connection = op.get_bind()
    rows = connection.execute(sa.select(_questions)).mappings().all()
    if rows:
        connection.execute(_approvals.insert(), [_as_approval(row) for row in rows])

    with op.batch_alter_table('delegate_questions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_delegate_questions_parked_run_id'))
        batch_op.drop_index('ix_delegate_questions_open')
        batch_op.drop_index('ix_delegate_questions_expiry')

    op.drop_table('delegate_questions')


def _as_approval(row: sa.RowMapping) -> dict[str, object]:
    shown = {'specialist': row['specialist'], 'question': row['question']}
    answer = {'answer': row['answer'], 'answer_message_id': row['answer_message_id']} if row['answer'] else {}
    return {'id': secrets.token_urlsafe(12), 'parked_run_id': row['parked_run_id'],
            'conversation_key': row['conversation_key'], 'tool_call_id': row['tool_call_id'], 'tool_id': ASK_PARENT,
            'tool_name': f"{row['specialist']}: {ASK_PARENT}", 'args': {**shown, **answer},
            'args_hash': hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest(),
            'requester_id': row['requester_id'], 'requester_name': row['requester_name'], 'policy': {},
            'status': row['status'], 'decided_by': row['answered_by'], 'decided_at': row['answered_at'],
            'expires_at': row['expires_at'], 'card_message_id': row['message_id'], 'created_at': row['created_at']}
