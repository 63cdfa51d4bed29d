"""The instance's unsubscribe secret on PostgreSQL (rule U1).

One-click unsubscribe tokens are signed with a secret of 32 random bytes
(`secrets.token_bytes`) that the adapter generates the first time it is asked for where none
is stored, and keeps in the table ``unsubscribe_secret`` of the library's schema. It is kept
apart from any session secret: rotating sessions must never break a link already sitting in
somebody's mailbox, and tokens never expire. The secret is never printed, logged or returned
by any listing; only `unsubscribe_secret` reads it.
"""

from __future__ import annotations

import secrets
from typing import Final

from notify_pg.db.errors import StorageError
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Seam

__all__ = ["SECRET_BYTES", "unsubscribe_secret"]

#: The length of the generated secret (U1).
SECRET_BYTES: Final = 32


def unsubscribe_secret(conn: Conn, *, schema: str = DEFAULT_SCHEMA) -> bytes:
    """Return the instance's unsubscribe secret, generating and storing it where missing.

    Race-safe: processes that find no secret at once each offer a fresh one with
    ``INSERT ... ON CONFLICT DO NOTHING`` (which waits for a concurrent insert to commit) and
    then read the stored row, so all of them get the one that won. Inside a caller's
    transaction the insert is part of it; on an autocommit connection it commits at once.

    Raises:
        StorageError: PostgreSQL is unreachable or the schema is not migrated.

    Example:
        >>> secret = unsubscribe_secret(conn)  # doctest: +SKIP
        >>> len(secret)  # doctest: +SKIP
        32
    """
    seam = Seam("notify_pg", schema)
    row = seam.one(conn, "unsubscribe_secret_get")
    if row is None:
        with seam.transaction(conn):
            row = seam.one(
                conn, "unsubscribe_secret_create", {"secret": secrets.token_bytes(SECRET_BYTES)}
            )
        if row is None:
            # Another process stored its secret first: a new statement sees its row (READ
            # COMMITTED; under REPEATABLE READ the insert itself fails to serialize instead).
            row = seam.one(conn, "unsubscribe_secret_get")
        if row is None:
            raise StorageError(
                "storage_conflict",
                "the unsubscribe secret was removed while it was being read",
                retryable=True,
            )
    return bytes(row[0])
