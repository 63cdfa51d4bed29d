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
from notify_pg.db.plan import Plan, atomic, one_row, run_plan
from notify_pg.db.seam import Conn, Seam

__all__ = ["SECRET_BYTES", "unsubscribe_secret", "unsubscribe_secret_plan"]

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
    return run_plan(conn, unsubscribe_secret_plan(schema=schema))


def unsubscribe_secret_plan(*, schema: str = DEFAULT_SCHEMA) -> Plan[bytes]:
    """`unsubscribe_secret` as a plan (`notify_pg.db.plan`)."""
    seam = Seam("notify_pg", schema)
    row = yield from one_row(seam, "unsubscribe_secret_get")
    if row is None:
        fresh = {"secret": secrets.token_bytes(SECRET_BYTES)}
        row = yield from atomic(one_row(seam, "unsubscribe_secret_create", fresh))
        if row is None:
            # Another process stored its secret first: a new statement sees its row (READ
            # COMMITTED; under REPEATABLE READ the insert itself fails to serialize instead).
            row = yield from one_row(seam, "unsubscribe_secret_get")
        if row is None:
            raise StorageError(
                "storage_conflict",
                "the unsubscribe secret was removed while it was being read",
                retryable=True,
            )
    return bytes(row[0])
