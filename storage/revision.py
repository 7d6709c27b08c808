"""Whether the schema is current, asked without loading Alembic (some 10 MB, for a start that nearly always finds
the schema up to date): the newest migration's id is written down here, and a test holds it to Alembic's head."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from storage.db import Database

HEAD = "0020"
"""The newest migration in `storage/migrations/versions/`: change it with every migration added."""
_STORED = text("SELECT version_num FROM alembic_version")


async def is_current(db: Database) -> bool:
    """True when the database stands at `HEAD`; False when it is older, or has never been migrated."""
    try:
        stored = await db.run(lambda connection: list(connection.execute(_STORED).scalars()), single=True)
    except DBAPIError:  # no alembic_version table: never migrated
        return False
    return stored == [HEAD]
