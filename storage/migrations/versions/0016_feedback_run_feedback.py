"""run_feedback: a person's 👍 or 👎 on a run's answer, one per person and run

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('run_feedback',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('voter_id', sa.String(length=256), nullable=False),
    sa.Column('voter_name', sa.String(length=256), nullable=False),
    sa.Column('rating', sa.String(length=8), nullable=False),
    sa.Column('rated_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'voter_id'))


def downgrade() -> None:
    # A table of its own: dropped in place, and nothing that points at runs is copied or cascaded.
    op.drop_table('run_feedback')
