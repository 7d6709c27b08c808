"""console_sessions, console_audit, replicas: sign-ins to the operator console, what operators did, who is alive

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('console_sessions',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('operator', sa.String(length=64), nullable=False),
    sa.Column('csrf_token', sa.String(length=64), nullable=False),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('ended_at', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_hash'))
    op.create_table('console_audit',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('operator', sa.String(length=64), nullable=False),
    sa.Column('action', sa.String(length=64), nullable=False),
    sa.Column('detail', sa.Text(), nullable=False),
    sa.Column('at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'))
    op.create_index('ix_console_audit_at', 'console_audit', ['at'])
    op.create_table('replicas',
    sa.Column('id', sa.String(length=128), nullable=False),
    sa.Column('started_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('seen_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('holding', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id'))


def downgrade() -> None:
    # Tables of their own: dropped in place, nothing points at them.
    op.drop_table('replicas')
    op.drop_index('ix_console_audit_at', table_name='console_audit')
    op.drop_table('console_audit')
    op.drop_table('console_sessions')
