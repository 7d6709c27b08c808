"""delegate_questions: the options a delegate offered, shown as buttons

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('delegate_questions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('choices', sa.JSON(), nullable=True))


def downgrade() -> None:
    # In place (SQLite 3.35+ drops a column itself): a batch copy would recreate the table for one column.
    op.drop_column('delegate_questions', 'choices')
