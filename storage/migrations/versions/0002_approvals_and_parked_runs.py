"""approvals and parked runs

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('parked_runs',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('conversation_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('bot_name', sa.String(length=128), nullable=False),
    sa.Column('turn', sa.JSON(), nullable=False),
    sa.Column('state', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('resumed_at', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversations.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('parked_runs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_parked_runs_run_id'), ['run_id'], unique=False)

    op.create_table('approvals',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('parked_run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('conversation_key', sa.String(length=512), nullable=False),
    sa.Column('tool_call_id', sa.String(length=128), nullable=False),
    sa.Column('tool_id', sa.String(length=128), nullable=False),
    sa.Column('tool_name', sa.String(length=128), nullable=False),
    sa.Column('args', sa.JSON(), nullable=False),
    sa.Column('args_hash', sa.String(length=64), nullable=False),
    sa.Column('requester_id', sa.String(length=128), nullable=False),
    sa.Column('requester_name', sa.String(length=256), nullable=False),
    sa.Column('policy', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('decided_by', sa.String(length=256), nullable=True),
    sa.Column('decided_at', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('expires_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('card_message_id', sa.String(length=128), nullable=True),
    sa.Column('card_closed_at', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['parked_run_id'], ['parked_runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.create_index('ix_approvals_pending_expiry', ['status', 'expires_at'], unique=False)

    op.create_table('approval_votes',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('approval_id', sa.String(length=32), nullable=False),
    sa.Column('voter_id', sa.String(length=128), nullable=False),
    sa.Column('voter_name', sa.String(length=256), nullable=False),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['approval_id'], ['approvals.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('approval_id', 'voter_id')
    )


def downgrade() -> None:
    op.drop_table('approval_votes')
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.drop_index('ix_approvals_pending_expiry')

    op.drop_table('approvals')
    op.drop_table('parked_runs')
