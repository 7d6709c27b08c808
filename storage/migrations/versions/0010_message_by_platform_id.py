"""messages: look a turn up by its platform message id without reading the conversation's whole history

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.create_index('ix_messages_platform_message', ['conversation_id', 'platform_message_id'],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.drop_index('ix_messages_platform_message')
