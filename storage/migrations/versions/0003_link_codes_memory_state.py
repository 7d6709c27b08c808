"""link codes, memory notes, conversation state, agent versions

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('agent_versions',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('agent_name', sa.String(length=128), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('spec', sa.JSON(), nullable=False),
    sa.Column('pins', sa.JSON(), nullable=False),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['agent_name'], ['agents.name'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('agent_name', 'version')
    )
    op.create_table('conversation_state',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('conversation_key', sa.String(length=512), nullable=False),
    sa.Column('capability', sa.String(length=64), nullable=False),
    sa.Column('data', sa.JSON(), nullable=False),
    sa.Column('updated_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('conversation_key', 'capability')
    )
    op.create_table('memory_notes',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('agent_name', sa.String(length=128), nullable=False),
    sa.Column('owner_kind', sa.String(length=16), nullable=False),
    sa.Column('owner_key', sa.String(length=512), nullable=False),
    sa.Column('path', sa.String(length=256), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('agent_name', 'owner_kind', 'owner_key', 'path')
    )
    op.create_table('link_codes',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('identity_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('code_hash', sa.String(length=64), nullable=False),
    sa.Column('expires_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('used_at', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('retired_at', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['identity_id'], ['identities.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('code_hash')
    )
    with op.batch_alter_table('link_codes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_link_codes_identity_id'), ['identity_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('link_codes', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_link_codes_identity_id'))

    op.drop_table('link_codes')
    op.drop_table('memory_notes')
    op.drop_table('conversation_state')
    op.drop_table('agent_versions')
