"""approvals: what a card offers, approvals for a conversation, and a denier's reason

Revision ID: 0013
Revises: 0012

Additive only: an older replica neither reads nor writes the new columns, so it may run beside a newer one (its
cards offer Approve and Deny, and it never creates an approval for a conversation).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.add_column(sa.Column('options', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('scope', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('grant_until', storage.models.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('reason', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('reason_prompt_id', sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column('reason_from', sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column('reason_until', storage.models.UTCDateTime(timezone=True), nullable=True))
        batch_op.create_index('ix_approvals_grants', ['conversation_key', 'tool_id', 'args_hash'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_approvals_grants', table_name='approvals')
    # In place (SQLite 3.35+ drops a column itself): a batch copy would drop `approvals`, and its votes with it.
    for column in ('reason_until', 'reason_from', 'reason_prompt_id', 'reason', 'grant_until', 'scope', 'options'):
        op.drop_column('approvals', column)
