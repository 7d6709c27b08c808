"""initial schema

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import storage.models

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('agents',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('spec', sa.JSON(), nullable=False),
    sa.Column('updated_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('bots',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('platform', sa.String(length=16), nullable=False),
    sa.Column('settings', sa.JSON(), nullable=False),
    sa.Column('webhook_secret', sa.String(length=256), nullable=True),
    sa.Column('updated_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('conversations',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('key', sa.String(length=512), nullable=False),
    sa.Column('bot_name', sa.String(length=128), nullable=False),
    sa.Column('platform', sa.String(length=16), nullable=False),
    sa.Column('channel_id', sa.String(length=128), nullable=False),
    sa.Column('thread_id', sa.String(length=128), nullable=True),
    sa.Column('is_direct', sa.Boolean(), nullable=False),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('key')
    )
    op.create_table('inbox',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('logical_id', sa.String(length=512), nullable=False),
    sa.Column('bot_name', sa.String(length=128), nullable=False),
    sa.Column('conversation_key', sa.String(length=512), nullable=False),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('lease_owner', sa.String(length=128), nullable=True),
    sa.Column('lease_until', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('reply_message_id', sa.String(length=128), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('finished_at', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('logical_id')
    )
    with op.batch_alter_table('inbox', schema=None) as batch_op:
        batch_op.create_index('ix_inbox_claimable', ['status', 'conversation_key', 'id'], unique=False)

    op.create_table('persons',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('display_name', sa.String(length=256), nullable=False),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('bindings',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('bot_name', sa.String(length=128), nullable=False),
    sa.Column('agent_name', sa.String(length=128), nullable=False),
    sa.Column('spec', sa.JSON(), nullable=False),
    sa.Column('updated_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['agent_name'], ['agents.name'], ),
    sa.ForeignKeyConstraint(['bot_name'], ['bots.name'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('bot_name')
    )
    op.create_table('identities',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('platform', sa.String(length=16), nullable=False),
    sa.Column('workspace', sa.String(length=256), nullable=False),
    sa.Column('platform_user_id', sa.String(length=128), nullable=False),
    sa.Column('handle', sa.String(length=256), nullable=True),
    sa.Column('display_name', sa.String(length=256), nullable=False),
    sa.Column('is_bot', sa.Boolean(), nullable=False),
    sa.Column('person_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('failed_link_attempts', sa.Integer(), nullable=False),
    sa.Column('link_locked_until', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('updated_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['person_id'], ['persons.id'], ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('platform', 'workspace', 'platform_user_id')
    )
    op.create_table('runs',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('conversation_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('inbox_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('bot_name', sa.String(length=128), nullable=False),
    sa.Column('agent_name', sa.String(length=128), nullable=False),
    sa.Column('agent_version', sa.Integer(), nullable=False),
    sa.Column('model', sa.String(length=256), nullable=False),
    sa.Column('identity_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('status', sa.String(length=32), nullable=False),
    sa.Column('requests', sa.Integer(), nullable=False),
    sa.Column('input_tokens', sa.Integer(), nullable=False),
    sa.Column('output_tokens', sa.Integer(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('started_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('finished_at', storage.models.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversations.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['identity_id'], ['identities.id'], ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['inbox_id'], ['inbox.id'], ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('messages',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('conversation_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('identity_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('speaker_name', sa.String(length=256), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('platform_message_id', sa.String(length=128), nullable=True),
    sa.Column('run_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('created_at', storage.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversations.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['identity_id'], ['identities.id'], ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.create_index('ix_messages_conversation_newest', ['conversation_id', 'id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.drop_index('ix_messages_conversation_newest')

    op.drop_table('messages')
    op.drop_table('runs')
    op.drop_table('identities')
    op.drop_table('bindings')
    op.drop_table('persons')
    with op.batch_alter_table('inbox', schema=None) as batch_op:
        batch_op.drop_index('ix_inbox_claimable')

    op.drop_table('inbox')
    op.drop_table('conversations')
    op.drop_table('bots')
    op.drop_table('agents')
