"""inbox: a stop asked for a running turn, and the running turn that took a message mid-turn (steer)

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('inbox', schema=None) as batch_op:
        batch_op.add_column(sa.Column('stop_requested_by', sa.String(length=256), nullable=True))
        batch_op.add_column(sa.Column('taken_by', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                                      nullable=True))


def downgrade() -> None:
    # In place (SQLite 3.35+ drops a column itself): a batch copy would drop `inbox`, and the runs pointing at it
    # would lose their item.
    op.drop_column('inbox', 'taken_by')
    op.drop_column('inbox', 'stop_requested_by')
