"""Alembic environment: runs the migrations over the gateway's async engine."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from storage.fulltext import modelled
from storage.models import Base


def run_on(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True,
                      compare_type=True, include_name=modelled)  # pyright: ignore[reportArgumentType] - Alembic's Literal keys
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `gateway migrate`, which passes the database connection")
run_on(connection)
