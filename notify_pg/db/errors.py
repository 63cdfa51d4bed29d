"""Errors of the PostgreSQL adapter, and the one place that translates psycopg's errors.

Every error is a `notify_core.values.errors.NotifyError` with a machine-readable ``code``, so a
host's
HTTP layer maps adapter errors the same way it maps core errors:

=====================  ================================  ====================================
class                  codes                             meaning
=====================  ================================  ====================================
`MigrationError`       ``migration_changed``,            a migration file differs from the
                       ``migration_unknown``             applied one / the database knows a
                                                         migration this package lacks
`NotFound`             ``not_found``                     unknown or unreadable target, unknown
                                                         or foreign rule (identical answers)
`Forbidden`            ``subject_kind_not_allowed``      an agent or an app reads or writes
                                                         preferences or quiet hours
`Conflict`             ``target_archived``,              a new preference on an archived target
                       ``already_exists``,               / a given rule id is taken / an
                       ``idempotency_key_reused``        idempotency key sent with another rule
`LimitReached`         ``limit_reached``                 an event payload would exceed the
                                                         configured byte bound
`StorageError`         ``storage_unavailable``,          psycopg failed (see `translate`)
                       ``storage_conflict``,
                       ``schema_missing``,
                       ``storage_failure``
`PartitionError`       ``partition_change_refused``,     a consumer's partition count cannot
                       ``partition_count_changed``       change now / another worker changed it
=====================  ================================  ====================================
"""

from __future__ import annotations

import psycopg
from psycopg import errors as pg_errors

from notify_core.values.errors import InvalidInput, NotifyError

__all__ = [
    "Conflict",
    "Forbidden",
    "LimitReached",
    "MigrationError",
    "NotFound",
    "PartitionError",
    "StorageError",
    "translate",
]


class MigrationError(NotifyError):
    """A migration cannot be applied: an applied file was changed, or is unknown to the package.

    Example:
        >>> MigrationError("migration_changed", "0001_x.sql was changed after it was applied").code
        'migration_changed'
    """


class NotFound(NotifyError, LookupError):
    """The target, thread or rule does not exist, or the person may not see it (code ``not_found``).

    An unknown ID and a foreign or unreadable one give the same error, so that nobody learns
    that a foreign ID exists.
    """

    def __init__(self, code: str = "not_found", message: str = "", pointer: str | None = None):
        super().__init__(code, message or "not found", pointer)


class Forbidden(NotifyError, PermissionError):
    """The principal may not use the operation at all (code ``subject_kind_not_allowed``).

    Preferences and quiet hours belong to humans: the host knows the caller as an agent or an
    app (docs/postgresql.md). A host answers it as 403, not as 404: it says nothing about
    any target or rule.
    """

    def __init__(
        self,
        code: str = "subject_kind_not_allowed",
        message: str = "",
        pointer: str | None = None,
    ):
        super().__init__(
            code, message or "agents and apps have no notification preferences", pointer
        )


class Conflict(NotifyError):
    """The write conflicts with stored state (codes ``target_archived``, ``already_exists``,
    ``idempotency_key_reused``)."""


class LimitReached(InvalidInput):
    """An event payload would exceed the configured byte bound (code ``limit_reached``)."""

    def __init__(self, code: str = "limit_reached", message: str = "", pointer: str | None = ""):
        super().__init__(code, message or "the list would exceed the event payload bound", pointer)


class StorageError(NotifyError):
    """PostgreSQL failed; ``retryable`` tells whether running the same transaction again may work.

    Args:
        code: ``storage_unavailable`` (no connection), ``storage_conflict`` (serialization
            failure or deadlock: retry), ``schema_missing`` (run ``notify db migrate``),
            ``storage_failure`` (anything else).
        message: one sentence; never contains parameter values.
        retryable: whether a retry of the whole transaction may succeed.
        sqlstate: PostgreSQL's SQLSTATE, when the server answered with one.
        server_message: PostgreSQL's primary message, when it names no value (see
            `server_message`); ``None`` otherwise.
    """

    def __init__(
        self,
        code: str,
        message: str,
        pointer: str | None = None,
        *,
        retryable: bool = False,
        sqlstate: str | None = None,
        server_message: str | None = None,
    ) -> None:
        super().__init__(code, message, pointer)
        self.retryable = retryable
        self.sqlstate = sqlstate
        self.server_message = server_message


class PartitionError(NotifyError):
    """A consumer's cursors do not fit the worker's partition count (``WorkerConfig.partitions``).

    Codes:
        ``partition_change_refused``: the consumer has cursors for another count, and they are
            not all at the same position, so no other count can take over where they stand;
            the message names the positions. Let the workers with the old count reach the
            head (``notify worker --once --partitions OLD`` while nothing appends), then start
            the new count.
        ``partition_count_changed``: a running worker finds that another worker replaced the
            consumer's cursors with another count; it must be restarted with that count.

    Example:
        >>> PartitionError("partition_change_refused", "positions differ").code
        'partition_change_refused'
    """


#: SQLSTATE classes whose primary message may quote a value (data exceptions quote the bad
#: input; a function's RAISE says anything): their message is left out.
_VALUE_CLASSES = ("22", "P0")


def server_message(exc: psycopg.Error) -> str | None:
    """PostgreSQL's primary message of ``exc``, when it cannot carry a parameter value.

    Primary messages name objects and causes (``permission denied for table event_log``,
    ``cannot execute INSERT in a read-only transaction``, ``terminating connection due to
    administrator command``); values appear only in the detail, which is never read, and in
    the messages of data exceptions (class 22) and of raised exceptions (class P0), which are
    left out. ``None`` when there is none to give.
    """
    state = exc.sqlstate or ""
    if not state or state.startswith(_VALUE_CLASSES):
        return None
    primary = exc.diag.message_primary
    return primary.strip().splitlines()[0] if primary and primary.strip() else None


def translate(exc: psycopg.Error) -> NotifyError:
    """Map a psycopg error to the library's error; the only place that knows psycopg's tree.

    Messages name the kind of failure and the SQLSTATE, never parameter values (which may be
    personal data); a `StorageError` carries the SQLSTATE and PostgreSQL's primary message
    (`server_message`) for the operator's log.
    """
    state = exc.sqlstate or ""
    said = server_message(exc)

    def storage(code: str, message: str, *, retryable: bool = False) -> StorageError:
        return StorageError(
            code, message, retryable=retryable, sqlstate=state or None, server_message=said
        )

    if isinstance(exc, pg_errors.SerializationFailure | pg_errors.DeadlockDetected):
        return storage(
            "storage_conflict", f"transaction conflict ({state}): retry it", retryable=True
        )
    if isinstance(exc, pg_errors.UndefinedTable | pg_errors.InvalidSchemaName):
        return storage(
            "schema_missing",
            f"the notify schema is missing ({state}): run `notify db migrate`",
        )
    if isinstance(exc, pg_errors.UniqueViolation):
        # The constraint and its table name the key (names of the schema, never values).
        constraint, table = exc.diag.constraint_name, exc.diag.table_name
        key = f": {constraint} of table {table}" if constraint and table else ""
        return Conflict("already_exists", f"the key exists already ({state}{key})")
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, psycopg.OperationalError) and not state:
        return storage("storage_unavailable", f"cannot reach PostgreSQL: {reason}")
    if isinstance(exc, psycopg.ProgrammingError) and not state:
        # Raised before any statement ran: a malformed connection string, a closed connection.
        return storage("storage_unavailable", f"invalid connection or call: {reason}")
    if state.startswith(("57P", "08", "25P03")):
        # The server ended the session (shutdown, terminated backend, idle timeout) or the
        # connection broke: the database is unavailable for now, not refusing the statement.
        return storage(
            "storage_unavailable",
            f"PostgreSQL ended the session ({state}): {said or reason}",
        )
    tail = f": {said}" if said else ""
    return storage("storage_failure", f"PostgreSQL error {type(exc).__name__} ({state}){tail}")
