"""The repository of ``preference_records``: the preference-record store on PostgreSQL.

rules.md#records, section 8. `PreferenceRecordRepository` answers exactly what the pure
`notify_core.records.PreferenceStore` answers, because every write runs the core's transition:

1. the request alone is checked against an empty core store first: the host's faults at the
   seam raise as in the core (`DegenerateChannelSet`, `InvalidPreferenceId`, `UsageError`,
   `NaiveDatetime`), and the refusals that depend on the request alone (``invalid-request``,
   ``undeclared-channel``) answer without writing (only a lookup of the offered id, so that
   a reused id raises first as in the core; they answer even when the database is down);
2. in one transaction (a savepoint inside the caller's), the principal's records are locked
   with ``pg_advisory_xact_lock`` on a hash of schema and principal, loaded in recording order
   into a core store, the core's ``set`` / ``suspend`` / ``delete`` is applied, and the
   difference is written: status and stamps of changed records first (``UPDATE`` guarded by the
   status the transition read), then the new record (``INSERT``);
3. whatever the database refuses on the way (a statement error, a lock timeout, a lost
   connection, a serialization failure) rolls the transaction back and answers
   ``Refused(storage-failure)`` (invariant 4: the prior record stays in effect).

The host supplies ``now``, the preference id and the declared channel set as in the core; the
repository never reads a clock. It stamps under the principal's lock, never before the
principal's latest stamp (`stamp_under_lock`): a host that read ``now`` before another write of
the principal committed a later instant would otherwise stamp backwards. Every supersession it
writes has a gap of zero (`SUPERSESSION_GAP_BOUND`).
Nothing here deletes a row (Invariant 9); a trigger of the table refuses any ``UPDATE`` of a
field other than status and the two instants, and a partial unique index keeps at most one
record in effect per principal (Invariant 3), whoever writes.

Reads (`read`, `current_for`, `history`, `in_effect_at`, `store_for`) refuse nothing; a
database failure while reading raises `notify_pg.db.errors.StorageError`. PostgreSQL text cannot
hold the character NUL: a read naming one matches nothing, as does a ``suspend`` or ``delete``
(``not-known``); a ``set`` carrying one in its id, principal or a channel name is refused by
the database (``storage-failure``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from psycopg.types.json import Json

from notify_core.records import (
    InvalidPreferenceId,
    Opaque,
    Outcome,
    PreferenceRecord,
    PreferenceStore,
    Refusal,
    Refused,
)
from notify_core.records.tables import opaque_to_json
from notify_pg.db.errors import Conflict, StorageError
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Seam
from notify_pg.stores.record_facts import record_from_json

__all__ = ["SUPERSESSION_GAP_BOUND", "PreferenceRecordRepository", "stamp_under_lock"]

_log = logging.getLogger("notify_pg")

#: PostgreSQL text cannot hold NUL: no record carries it, so a read with one matches nothing
#: (and a write with one is refused by the database: storage-failure).
_NUL = "\x00"

#: The refused write of the adapter (a database error).
STORAGE_FAILURE = Refused(refusal=Refusal.STORAGE_FAILURE)

#: The supersession gap bound this store declares (the auditor reads gaps against it): a set
#: stamps the prior record's ``deleted_at`` and the new record's ``set_at`` with one instant in
#: one transaction, so every supersession it writes has a gap of zero; a wider gap between a
#: deleted record and its successor is a delete followed by a later set (Check 4.2: ambiguous).
SUPERSESSION_GAP_BOUND = timedelta(0)

#: A write's transition on the principal's loaded records, given the instant to stamp.
Transition = Callable[[PreferenceStore, datetime], tuple[PreferenceStore, Outcome]]


def stamp_under_lock(now: datetime, history: Iterable[PreferenceRecord]) -> datetime:
    """Return the instant a write stamps: the host's ``now``, never before the principal's
    latest stamp, so that the stamps keep the order the writes were made in.

    A host reads ``now`` before the write takes the principal's lock; when another write of the
    principal took the lock in between with a later reading, stamping the earlier ``now`` would
    put a superseded record's ``deleted_at`` before its own ``set_at``. Called under the lock
    on the principal's records, so the stamps of one principal follow the order in which the
    lock serialized the writes. It decides no outcome (Clock dependence 1-2): only the instant.

    Example:
        >>> from datetime import UTC, datetime, timedelta
        >>> stamp_under_lock(datetime(2026, 3, 1, tzinfo=UTC), [])
        datetime.datetime(2026, 3, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
    latest = now
    for record in history:
        for instant in (record.set_at, record.suspended_at, record.deleted_at):
            if instant is not None and instant > latest:
                latest = instant
    return latest


def _json(value: Opaque | None) -> Json | None:
    if value is None:
        return None
    return Json(opaque_to_json(value), dumps=_dumps)


def _dumps(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def _reiterable(value: object) -> object:
    """Materialize a one-shot iterable of channel names (a generator) so it can be read twice.

    Anything else (a string, a non-iterable) is handed on unchanged for the core to refuse.
    """
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
        return tuple(value)
    return value


class PreferenceRecordRepository:
    """The preference-record store (docs/rules.md#records) in ``<schema>.preference_records``.

    Every method takes the connection it runs on. On an idle connection a write opens and
    commits its own transaction; inside a caller's transaction it is a savepoint of it (a
    refused write rolls back only its savepoint, and the caller commits). Run writes at READ
    COMMITTED (PostgreSQL's default): at REPEATABLE READ or SERIALIZABLE a write that waited
    for another write of the same principal fails, and answers ``storage-failure``.

    Args:
        schema: the library's schema (migrated with `notify_pg.db.migrate`).

    Example:
        >>> repo = PreferenceRecordRepository("notify")
        >>> repo.set(conn, "user_u", now=now, preference_id="pref_001",
        ...          declared_channels=["email", "sms"], format="plain")  # doctest: +SKIP
        Ok(preference_id='pref_001')
    """

    def __init__(self, schema: str = DEFAULT_SCHEMA) -> None:
        self.schema = schema
        self._seam = Seam("notify_pg", schema)

    # -- reads ---------------------------------------------------------------------------

    def read(self, conn: Conn, preference_id: str) -> PreferenceRecord | None:
        """Return the whole record with that id in any status, or ``None`` (not known).

        Raises:
            UsageError: ``preference_id`` is not a string.
            StorageError: the database failed.
        """
        PreferenceStore().read(preference_id)  # the core's argument check
        if _NUL in preference_id:
            return None
        row = self._seam.one(conn, "read_record", {"preference_id": preference_id})
        return None if row is None else record_from_json(row)

    def current_for(self, conn: Conn, principal_ref: str) -> PreferenceRecord | None:
        """Return the record currently in effect for a principal, or ``None`` (none in effect).

        Raises:
            UsageError: ``principal_ref`` is not a string.
            StorageError: the database failed.
        """
        PreferenceStore().current_for(principal_ref)
        if _NUL in principal_ref:
            return None
        row = self._seam.one(conn, "current_record", {"principal_ref": principal_ref})
        return None if row is None else record_from_json(row)

    def store_for(self, conn: Conn, principal_ref: str) -> PreferenceStore:
        """Return every record of a principal, in recording order, as a core store.

        The audit works on this value: ``history``, ``current_for`` and ``in_effect_at`` of the
        core answer from it exactly as from the whole store.

        Raises:
            UsageError: ``principal_ref`` is not a string.
            StorageError: the database failed.
        """
        PreferenceStore().history(principal_ref)
        if _NUL in principal_ref:
            return PreferenceStore()
        return self._load(conn, principal_ref, None)

    def history(self, conn: Conn, principal_ref: str) -> tuple[PreferenceRecord, ...]:
        """Return every record of a principal in recording order, deleted ones included.

        Raises:
            UsageError: ``principal_ref`` is not a string.
            StorageError: the database failed.
        """
        return self.store_for(conn, principal_ref).history(principal_ref)

    def in_effect_at(
        self, conn: Conn, principal_ref: str, instant: datetime
    ) -> PreferenceRecord | None:
        """Return the record that governed a principal at ``instant`` (Check 2.1-2.2), or ``None``.

        The core's reconstruction (`PreferenceStore.in_effect_at`) on the principal's records.

        Raises:
            UsageError: ``principal_ref`` is not a string.
            NaiveDatetime: ``instant`` has no time zone.
            StorageError: the database failed.
        """
        PreferenceStore().in_effect_at(principal_ref, instant)
        return self.store_for(conn, principal_ref).in_effect_at(principal_ref, instant)

    # -- writes --------------------------------------------------------------------------

    def set(
        self,
        conn: Conn,
        principal_ref: str,
        *,
        now: datetime,
        preference_id: str,
        declared_channels: Iterable[str],
        channel_preferences: Mapping[str, object] | None = None,
        frequency_limit: object = None,
        quiet_hours: object = None,
        format: object = None,
        metadata: object = None,
    ) -> Outcome:
        """Record a new preference set for a principal, superseding the one in effect.

        `PreferenceStore.set` on the principal's records, written in one transaction: the prior
        record moves to deleted (``deleted_at = now``) and the new one lands in active, or
        neither happens (invariant 4).

        Returns:
            ``Ok(preference_id)``; ``Refused`` with ``invalid-request`` or
            ``undeclared-channel`` (as the core, pointer included) or ``storage-failure``.

        Raises:
            NaiveDatetime, DegenerateChannelSet, InvalidPreferenceId, UsageError: as
                `PreferenceStore.set`; a preference id held by any record of the table, of
                any principal, is ``preference_id_reused``.
        """
        declared = _reiterable(declared_channels)
        request: dict[str, Any] = {
            "now": now,
            "preference_id": preference_id,
            "declared_channels": declared,
            "channel_preferences": channel_preferences,
            "frequency_limit": frequency_limit,
            "quiet_hours": quiet_hours,
            "format": format,
            "metadata": metadata,
        }
        _, outcome = PreferenceStore().set(principal_ref, **request)
        if isinstance(outcome, Refused):
            # The core checks the id for reuse before the request: so does the adapter, when
            # the database answers; the refusal stands without it (nothing is written anyway).
            try:
                taken = self.read(conn, preference_id)
            except (StorageError, Conflict):
                return outcome
            if taken is not None:
                PreferenceStore.from_records([taken]).set(principal_ref, **request)  # raises
            return outcome

        def write(before: PreferenceStore, stamp: datetime) -> tuple[PreferenceStore, Outcome]:
            return before.set(principal_ref, **{**request, "now": stamp})

        return self._write(conn, principal_ref, preference_id, now, write)

    def suspend(self, conn: Conn, preference_id: str, *, now: datetime) -> Outcome:
        """Pause an active record: status and ``suspended_at`` change, nothing else.

        Returns:
            ``Ok(preference_id)``; ``Refused`` with ``not-known``, ``not-active`` or
            ``storage-failure``.

        Raises:
            NaiveDatetime: ``now`` has no time zone.
            UsageError: ``preference_id`` is not a string.
        """
        PreferenceStore().suspend(preference_id, now=now)
        return self._write_by_id(
            conn, preference_id, now, lambda before, at: before.suspend(preference_id, now=at)
        )

    def delete(self, conn: Conn, preference_id: str, *, now: datetime) -> Outcome:
        """Retire an active or suspended record; the row stays (Invariant 9).

        Returns:
            ``Ok(preference_id)``; ``Refused`` with ``not-known``, ``already-deleted`` or
            ``storage-failure``.

        Raises:
            NaiveDatetime: ``now`` has no time zone.
            UsageError: ``preference_id`` is not a string.
        """
        PreferenceStore().delete(preference_id, now=now)
        return self._write_by_id(
            conn, preference_id, now, lambda before, at: before.delete(preference_id, now=at)
        )

    # -- the write path ------------------------------------------------------------------

    def _write_by_id(
        self,
        conn: Conn,
        preference_id: str,
        now: datetime,
        transition: Transition,
    ) -> Outcome:
        def find() -> str | None:
            if _NUL in preference_id:
                return None
            row = self._seam.one(conn, "read_record", {"preference_id": preference_id})
            # principal_ref never changes, so it may be read before the principal's lock.
            return None if row is None else str(row[1])

        return self._write(conn, find, preference_id, now, transition)

    def _write(
        self,
        conn: Conn,
        principal: str | Callable[[], str | None],
        preference_id: str,
        now: datetime,
        transition: Transition,
    ) -> Outcome:
        """Lock, load, apply the core's transition and write the difference, or refuse.

        The transition stamps `stamp_under_lock`: the host's ``now``, raised to the latest
        stamp of the principal's records when the host read its clock before another write of
        the principal took the lock and committed a later instant.
        """
        try:
            with self._seam.transaction(conn):
                principal_ref = principal if isinstance(principal, str) else principal()
                if principal_ref is None:
                    # No record carries the id: the core answers not-known on an empty store.
                    return transition(PreferenceStore(), now)[1]
                params = {"schema": self.schema, "principal_ref": principal_ref}
                self._seam.one(conn, "lock_principal_records", params)
                before = self._load(conn, principal_ref, preference_id)
                stamp = stamp_under_lock(now, before.history(principal_ref))
                after, outcome = transition(before, stamp)
                if isinstance(outcome, Refused):
                    return outcome
                self._write_difference(conn, before, after)
                return outcome
        except (StorageError, Conflict) as err:
            _log.warning("the database refused a preference record write (%s)", err.code)
            return STORAGE_FAILURE

    def _load(self, conn: Conn, principal_ref: str, preference_id: str | None) -> PreferenceStore:
        """The principal's records, and the one carrying ``preference_id`` whoever holds it.

        A record of another principal that holds the id lets the core refuse its reuse.
        """
        params = {"principal_ref": principal_ref, "preference_id": preference_id}
        rows = self._seam.all(conn, "principal_records", params)
        return PreferenceStore.from_records(record_from_json(row) for row in rows)

    def _write_difference(
        self, conn: Conn, before: PreferenceStore, after: PreferenceStore
    ) -> None:
        """Write what the transition changed: stamps first, then the new record.

        Stamps first, because the partial unique index admits the new record in effect only
        once the prior one is deleted.
        """
        new: list[PreferenceRecord] = []
        for preference_id, record in after.records.items():
            old = before.records.get(preference_id)
            if old is None:
                new.append(record)
            elif old != record:
                changed = self._seam.run(
                    conn,
                    "stamp_record",
                    {
                        "preference_id": preference_id,
                        "old_status": old.status.value,
                        "status": record.status.value,
                        "suspended_at": record.suspended_at,
                        "deleted_at": record.deleted_at,
                    },
                )
                if changed != 1:
                    # Only a writer that bypassed the principal's lock gets here.
                    raise StorageError(
                        "storage_failure", "a preference record changed under the lock"
                    )
        for record in new:
            inserted = self._seam.one(conn, "insert_record", self._row(record))
            if inserted is None:
                # The same id was recorded at the same time by a write of another principal.
                raise InvalidPreferenceId(
                    "preference_id_reused",
                    f"the preference id {record.preference_id!r} is already taken (never reused)",
                    "/preference_id",
                )

    @staticmethod
    def _row(record: PreferenceRecord) -> dict[str, Any]:
        return {
            "preference_id": record.preference_id,
            "principal_ref": record.principal_ref,
            "declared_channels": sorted(record.declared_channels),
            "set_at": record.set_at,
            "status": record.status.value,
            "channel_preferences": _json(record.channel_preferences),
            "frequency_limit": _json(record.frequency_limit),
            "quiet_hours": _json(record.quiet_hours),
            "format": _json(record.format),
            "metadata": _json(record.metadata),
            "suspended_at": record.suspended_at,
            "deleted_at": record.deleted_at,
        }
