"""schedule_marks and reminders: when each operator's schedule fires next, and the reminders agents set

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('schedule_marks',
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('cron', sa.String(length=128), nullable=False),
    sa.Column('timezone', sa.String(length=64), nullable=False),
    sa.Column('next_fire_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name'))
    op.create_table('reminders',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('bot_name', sa.String(length=128), nullable=False),
    sa.Column('conversation_key', sa.String(length=512), nullable=False),
    sa.Column('address', sa.JSON(), nullable=False),
    sa.Column('speaker', sa.JSON(), nullable=False),
    sa.Column('owner_key', sa.String(length=64), nullable=False),
    sa.Column('mode', sa.String(length=8), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('recurrence', sa.String(length=128), nullable=True),
    sa.Column('timezone', sa.String(length=64), nullable=False),
    sa.Column('next_fire_at', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('fired', sa.Integer(), nullable=False),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'))
    op.create_index('ix_reminders_due', 'reminders', ['status', 'next_fire_at'], unique=False)
    op.create_index('ix_reminders_conversation', 'reminders', ['conversation_key', 'status'], unique=False)


def downgrade() -> None:
    # Tables of their own: dropped in place, nothing points at them.
    op.drop_index('ix_reminders_conversation', table_name='reminders')
    op.drop_index('ix_reminders_due', table_name='reminders')
    op.drop_table('reminders')
    op.drop_table('schedule_marks')
