"""conversations: where the agent's history starts, so `new` gives a chat a fresh conversation

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('conversations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('history_from', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                                      nullable=True))


def downgrade() -> None:
    # In place (SQLite 3.35+ drops a column itself): a batch copy would drop `conversations`, and with it, by their
    # foreign keys, every turn, run and parked run.
    op.drop_column('conversations', 'history_from')
