"""messages: full-text search over every turn's words, maintained by the database

Revision ID: 0007
Revises: 0005

PostgreSQL: a GIN index over `to_tsvector('simple', text)` (no stemming, every language alike).
SQLite: an FTS5 external-content table over `messages.text`, kept in step by triggers, filled from the
turns already stored. The statements are written out here, as they stood, rather than imported.
"""

from __future__ import annotations

from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

POSTGRES = (
    "CREATE INDEX ix_messages_search ON messages USING GIN (to_tsvector('simple', text))",
)
SQLITE = (
    "CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='messages', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 0')",
    "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN "
    "INSERT INTO messages_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN "
    "INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN "
    "INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text); "
    "INSERT INTO messages_fts(rowid, text) VALUES (new.id, new.text); END",
    "INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')",
)


def upgrade() -> None:
    for statement in POSTGRES if op.get_bind().dialect.name == "postgresql" else SQLITE:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX ix_messages_search")
        return
    for trigger in ("messages_fts_insert", "messages_fts_delete", "messages_fts_update"):
        op.execute(f"DROP TRIGGER {trigger}")
    op.execute("DROP TABLE messages_fts")
