"""runs: what each run cost (genai-prices), and the indexes budgets read a day's or a month's spending by

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
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('cost_usd', sa.Numeric(18, 10), nullable=True))
        batch_op.create_index('ix_runs_bot_started', ['bot_name', 'started_at'], unique=False)
        batch_op.create_index('ix_runs_bot_identity_started', ['bot_name', 'identity_id', 'started_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_runs_bot_identity_started', table_name='runs')
    op.drop_index('ix_runs_bot_started', table_name='runs')
    # In place (SQLite 3.35+ drops a column itself): a batch copy would drop `runs`, and with it, by their
    # foreign keys, every parked run and approval of the deployment.
    op.drop_column('runs', 'cost_usd')
