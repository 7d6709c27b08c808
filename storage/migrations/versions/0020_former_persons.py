"""former_persons: the ids of persons merged into another by a link, which `forget` still reaches

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('former_persons',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=False, nullable=False),
    sa.Column('person_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('merged_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['id'], ['persons.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['person_id'], ['persons.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'))
    op.create_index('ix_former_persons_person_id', 'former_persons', ['person_id'])


def downgrade() -> None:
    # A table of its own: dropped in place, nothing points at it.
    op.drop_index('ix_former_persons_person_id', table_name='former_persons')
    op.drop_table('former_persons')
