"""Persistence: SQLAlchemy models and database, the Redis-or-local cache, Alembic migrations."""
