"""runs: the steps of an answered run (model responses, tools) and when its first text showed, for the console

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('steps', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('first_shown_at', storage.models.UTCDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    # In place (SQLite 3.35+ drops a column itself): a batch copy would drop `runs`, and with it, by their
    # foreign keys, every parked run and approval of the deployment.
    op.drop_column('runs', 'first_shown_at')
    op.drop_column('runs', 'steps')
