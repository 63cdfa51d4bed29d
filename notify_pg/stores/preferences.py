"""The repository of ``notification_preferences`` (L1-L7; docs/postgresql.md, Preferences).

Semantics, each write in one transaction with exactly one event per change:

- `PreferenceRepository.list`, `put` and `delete` refuse a person or actor the host knows as an
  agent or an app with `Forbidden` (``subject_kind_not_allowed``: settings of humans only).
- `PreferenceRepository.put`: lock the target's path (thread, channel, space ``FOR SHARE``),
  refuse an unknown or unreadable target with `NotFound` and an archived one with `Conflict`
  (``target_archived``), then `PreferenceRepository.upsert`.
- `PreferenceRepository.upsert`: the write path of the table for set levels: one statement
  inserts the row with version 1 or changes it with version + 1 when level or
  ``muted_until`` differ (``IS DISTINCT FROM``); an equal write changes nothing and appends
  no event.
- `PreferenceRepository.insert_if_absent`: automatic following (S5): insert the row unless
  one exists, never overwrite; one event only when inserted.
- `PreferenceRepository.delete`: same path checks (an archived target is allowed); a removed
  row appends ``deleted: true`` with its last version + 1; a later put starts again at 1.
- `PreferenceRepository.list`: the person's rows in key order, only those on targets the
  person can still read; the others stay stored.
- `PreferenceRepository.remove_for_archive`: in the archive's transaction, remove the rows of
  an archived space or channel and of everything below it, one event per row in key order.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import Any, Protocol

import attrs

from notify_core.hints.levels import Level, Preference, Target, TargetKind
from notify_core.values.errors import UsageError
from notify_pg.db.errors import Conflict, NotFound
from notify_pg.db.seam import Conn, Seam
from notify_pg.stores.events import NOTIFICATION_PREF_UPDATED, EventLog, NewEvent
from notify_pg.stores.ports import AccessPort, NotificationPath, PeoplePort, StructurePort
from notify_pg.stores.subjects import require_humans
from notify_pg.stores.values import PutResult, StoredPreference

__all__ = ["PreferenceRepository"]


class _Host(StructurePort, AccessPort, PeoplePort, Protocol):
    """The host facts preference writes need."""


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


class PreferenceRepository:
    """Reads and writes the notification levels of people (rules L1-L3).

    Args:
        host: the structure and access ports of the host.
        events: the event log the changes are appended to.
        schema: the library's schema.
    """

    def __init__(self, host: _Host, events: EventLog, schema: str) -> None:
        self._host = host
        self._events = events
        self._seam = Seam("notify_pg", schema)

    def list(self, conn: Conn, user_id: str) -> builtins.list[StoredPreference]:
        """Return the person's rows on targets they can still read, by target kind, then id.

        Rows of targets the person lost stay stored and appear again when the right returns
        (a lost right may come back; a list names only what the person can read now).

        Raises:
            Forbidden: the host knows the person as an agent or an app
                (``subject_kind_not_allowed``).
        """
        require_humans(self._host, conn, user_id, None)
        rows = self._seam.all(conn, "list_preferences", {"user_id": user_id})
        stored = [
            _stored(user_id, Target(kind=kind, id=target_id), level, muted_until, version)
            for kind, target_id, level, muted_until, version in rows
        ]
        if not stored:
            return []
        readable = self._host.readable(conn, user_id, [p.target for p in stored])
        return [p for p in stored if p.target in readable]

    def put(
        self,
        conn: Conn,
        user_id: str,
        target: Target,
        preference: Preference,
        *,
        actor: str | None = None,
    ) -> PutResult:
        """Set the person's level for a target they can read (L1, L2).

        Args:
            conn: the connection; runs in its transaction, or in a new one when idle.
            user_id: the person.
            target: the space, channel or thread.
            preference: the level and optional ``muted_until`` (stored as given, also past).
            actor: who acts, for the event; the person when absent.

        Returns:
            The stored row and whether it changed (an equal write changes nothing).

        Raises:
            Forbidden: the host knows the person or the actor as an agent or an app
                (``subject_kind_not_allowed``), checked first.
            NotFound: the target does not exist as that kind, or the person cannot read it.
            Conflict: the target, its channel or its space is archived (``target_archived``).
        """
        with self._seam.transaction(conn):
            require_humans(self._host, conn, user_id, actor)
            path = self._checked_path(conn, user_id, target)
            if path.archived:
                raise Conflict(
                    "target_archived", "the target is archived and takes no new preference"
                )
            return self.upsert(conn, user_id, target, preference, actor=actor)

    def upsert(
        self,
        conn: Conn,
        user_id: str,
        target: Target,
        preference: Preference,
        *,
        actor: str | None = None,
    ) -> PutResult:
        """Write a row without any check: the single write path of the table.

        It neither locks the path nor checks rights or archiving: its callers do (`put`).
        Automatic following never overwrites a row and uses `insert_if_absent` instead.
        """
        key = _key(user_id, target)
        with self._seam.transaction(conn):
            params: dict[str, Any] = {
                **key,
                "level": preference.level.value,
                "muted_until": preference.muted_until,
            }
            row = self._seam.one(conn, "upsert_preference", params)
            changed = row is not None
            if row is None:
                # Equal values: the statement locked the row and changed nothing.
                row = self._seam.one(conn, "get_preference", key)
                assert row is not None
            stored = _stored(user_id, target, *row)
            if changed:
                self._events.append(conn, _event(stored, actor or user_id, deleted=False))
        return PutResult(preference=stored, changed=changed)

    def insert_if_absent(
        self,
        conn: Conn,
        user_id: str,
        target: Target,
        preference: Preference,
        *,
        actor: str | None = None,
        occurred_at: datetime | None = None,
        defer: builtins.list[NewEvent] | None = None,
    ) -> StoredPreference | None:
        """Insert a row unless the person has one for the target (automatic following, S5).

        Never overwrites: an existing row (a mute, ``mentions``, anything) stays as it is and
        nothing is appended. Only an inserted row appends one ``notification_pref.updated``
        (version 1). Like `upsert` it checks nothing; its caller (the pipeline's following)
        decided that the person follows the thread.

        Args:
            occurred_at: the event's time (absent: the database clock), so that an event
                appended by a consumer carries the time of the message it follows.
            defer: if given, the event is added to this list instead of being appended; the
                caller appends it later in the same transaction (a consumer appends its
                events at the end of its batch, so it holds the log's append lock briefly).

        Returns:
            The inserted row, or ``None`` when a row existed.
        """
        key = _key(user_id, target)
        params: dict[str, Any] = {
            **key,
            "level": preference.level.value,
            "muted_until": preference.muted_until,
        }
        # With ``defer`` the insert is the only statement here (the caller appends the event
        # in its transaction): no savepoint around it, two round trips fewer per follow.
        block = nullcontext() if defer is not None else self._seam.transaction(conn)
        with block:
            row = self._seam.one(conn, "insert_preference_if_absent", params)
            if row is None:
                return None
            stored = _stored(user_id, target, *row)
            event = attrs.evolve(
                _event(stored, actor or user_id, deleted=False), occurred_at=occurred_at
            )
            if defer is not None:
                defer.append(event)
            else:
                self._events.append(conn, event)
        return stored

    def delete(
        self, conn: Conn, user_id: str, target: Target, *, actor: str | None = None
    ) -> StoredPreference | None:
        """Remove the person's row for a target (docs/postgresql.md, Preferences).

        An archived target is allowed, so a person can always clear a row.

        Returns:
            The row as the event carries it (last values, version = last + 1), or ``None``
            when there was no row (no event).

        Raises:
            Forbidden: the host knows the person or the actor as an agent or an app
                (``subject_kind_not_allowed``), checked first.
            NotFound: the target does not exist as that kind, or the person cannot read it.
        """
        key = _key(user_id, target)
        with self._seam.transaction(conn):
            require_humans(self._host, conn, user_id, actor)
            self._checked_path(conn, user_id, target)
            row = self._seam.one(conn, "delete_preference", key)
            if row is None:
                return None
            level, muted_until, version = row
            gone = _stored(user_id, target, level, muted_until, version + 1)
            self._events.append(conn, _event(gone, actor or user_id, deleted=True))
        return gone

    def remove_for_archive(
        self, conn: Conn, target: Target, *, actor: str | None = None
    ) -> builtins.list[StoredPreference]:
        """Remove the preferences of an archived space or channel and of everything below it.

        Call it inside the transaction that archives the target, after the host's archive
        statement has locked the space or channel row (docs/postgresql.md, Preferences).
        Targets are the space, every channel of it (archived ones included) and every thread
        of those channels; or the channel and its threads.

        Returns:
            The removed rows in ascending (user, target kind, target id) order, each with
            version = last + 1; one ``notification_pref.updated`` with ``deleted: true`` was
            appended per row in that order, audience the row's person, actor ``actor``.

        Raises:
            UsageError: ``target`` is a thread (threads are not archived on their own).
        """
        if target.kind is TargetKind.THREAD:
            raise UsageError("invalid_target", "only a space or a channel is archived")
        with self._seam.transaction(conn):
            spaces: Sequence[str] = ()
            if target.kind is TargetKind.SPACE:
                spaces = [target.id]
                channels = list(self._host.channel_ids_of_space(conn, target.id))
            else:
                channels = [target.id]
            threads = list(self._host.thread_ids_of_channels(conn, channels)) if channels else []
            rows = self._seam.all(
                conn,
                "delete_preferences_of_targets",
                {"spaces": list(spaces), "channels": channels, "threads": threads},
            )
            gone = sorted(
                (
                    _stored(
                        user_id, Target(kind=kind, id=target_id), level, muted_until, version + 1
                    )
                    for user_id, kind, target_id, level, muted_until, version in rows
                ),
                key=lambda p: (p.user_id, p.target.kind.value, p.target.id),
            )
            self._events.append_many(conn, [_event(p, actor, deleted=True) for p in gone])
        return gone

    def _checked_path(self, conn: Conn, user_id: str, target: Target) -> NotificationPath:
        path = self._host.notification_path(conn, target, lock=True)
        if path is None or target not in self._host.readable(conn, user_id, [target]):
            raise NotFound()
        return path


def _event(row: StoredPreference, actor: str | None, *, deleted: bool) -> NewEvent:
    payload: dict[str, object] = {"preference": row.to_json()}
    if deleted:
        payload["deleted"] = True
    return NewEvent(
        type=NOTIFICATION_PREF_UPDATED, payload=payload, actor=actor, audience=row.user_id
    )


def _key(user_id: str, target: Target) -> dict[str, Any]:
    """The primary key of a row as query parameters."""
    return {"user_id": user_id, "target_kind": target.kind.value, "target_id": target.id}


def _stored(
    user_id: str, target: Target, level: str, muted_until: datetime | None, version: int
) -> StoredPreference:
    """A stored row from the columns a query returns."""
    return StoredPreference(
        user_id=user_id,
        target=target,
        level=Level(level),
        muted_until=_utc(muted_until),
        version=version,
    )
