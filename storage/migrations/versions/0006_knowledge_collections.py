"""knowledge: documents and chunks of collections, with the database's own full-text index

Revision ID: 0006
Revises: 0005

PostgreSQL keeps a generated `tsvector` ('simple' configuration) under a GIN index; SQLite an FTS5 table
kept by triggers. The statements are written out here, as the schema stood at this revision.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

_INDEX = {
    "postgresql": (
        "ALTER TABLE knowledge_chunks ADD COLUMN search tsvector "
        "GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED",
        "CREATE INDEX ix_knowledge_chunks_search ON knowledge_chunks USING gin (search)",
    ),
    "sqlite": (
        "CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5(text, content='knowledge_chunks', content_rowid='id', "
        "tokenize='unicode61 remove_diacritics 0')",
        "CREATE TRIGGER knowledge_chunks_ai AFTER INSERT ON knowledge_chunks BEGIN "
        "INSERT INTO knowledge_chunks_fts(rowid, text) VALUES (new.id, new.text); END",
        "CREATE TRIGGER knowledge_chunks_ad AFTER DELETE ON knowledge_chunks BEGIN "
        "INSERT INTO knowledge_chunks_fts(knowledge_chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
        "CREATE TRIGGER knowledge_chunks_au AFTER UPDATE ON knowledge_chunks BEGIN "
        "INSERT INTO knowledge_chunks_fts(knowledge_chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); "
        "INSERT INTO knowledge_chunks_fts(rowid, text) VALUES (new.id, new.text); END",
    ),
}


def upgrade() -> None:
    op.create_table(
        'knowledge_documents',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('collection', sa.String(length=64), nullable=False),
        sa.Column('source', sa.String(length=1024), nullable=False),
        sa.Column('title', sa.String(length=512), nullable=False),
        sa.Column('chunks', sa.Integer(), nullable=False),
        sa.Column('characters', sa.Integer(), nullable=False),
        sa.Column('added_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('collection', 'source'),
    )
    op.create_table(
        'knowledge_chunks',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('document_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('collection', sa.String(length=64), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.Column('text', sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(['document_id'], ['knowledge_documents.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_knowledge_chunks_collection', 'knowledge_chunks', ['collection'])
    op.create_index('ix_knowledge_chunks_document_id', 'knowledge_chunks', ['document_id'])
    for statement in _INDEX.get(op.get_bind().dialect.name, ()):
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("knowledge_chunks_ai", "knowledge_chunks_ad", "knowledge_chunks_au"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS knowledge_chunks_fts")
    op.drop_index('ix_knowledge_chunks_document_id', table_name='knowledge_chunks')
    op.drop_index('ix_knowledge_chunks_collection', table_name='knowledge_chunks')
    op.drop_table('knowledge_chunks')
    op.drop_table('knowledge_documents')
