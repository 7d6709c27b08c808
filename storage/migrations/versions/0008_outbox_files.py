"""outbox_files: what a run posts into the chat, stored before it is posted

Revision ID: 0008
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0008'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'outbox_files',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('turn_key', sa.String(length=64), nullable=False),
        sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
        sa.Column('digest', sa.String(length=64), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('mime_type', sa.String(length=128), nullable=False),
        sa.Column('caption', sa.Text(), nullable=True),
        sa.Column('data', sa.LargeBinary(), nullable=False),
        sa.Column('size', sa.Integer(), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('claimed_until', storage.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column('posted_id', sa.String(length=128), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column('posted_at', storage.models.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('turn_key', 'digest'),
    )
    op.create_index('ix_outbox_files_turn_status', 'outbox_files', ['turn_key', 'status'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_outbox_files_turn_status', table_name='outbox_files')
    op.drop_table('outbox_files')
