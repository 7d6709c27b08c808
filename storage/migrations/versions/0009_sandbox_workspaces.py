"""sandbox_workspaces: the `state` workspaces of the `sandbox` capability

Revision ID: 0009
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('sandbox_workspaces',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('workspace_key', sa.String(length=64), nullable=False),
    sa.Column('label', sa.Text(), nullable=False),
    sa.Column('files', sa.JSON(), nullable=False),
    sa.Column('directories', sa.JSON(), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('updated_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('workspace_key')
    )


def downgrade() -> None:
    op.drop_table('sandbox_workspaces')
