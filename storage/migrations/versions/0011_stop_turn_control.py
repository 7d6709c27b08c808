"""inbox: a stop asked for a running turn, and the running turn that took a message mid-turn (steer)

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('inbox', schema=None) as batch_op:
        batch_op.add_column(sa.Column('stop_requested_by', sa.String(length=256), nullable=True))
        batch_op.add_column(sa.Column('taken_by', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                                      nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('inbox', schema=None) as batch_op:
        batch_op.drop_column('taken_by')
        batch_op.drop_column('stop_requested_by')
