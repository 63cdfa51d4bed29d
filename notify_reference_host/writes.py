"""The reference host's writes, for tests and the demo: people, places, devices, rights.

`HostWrites` is a part of `notify_reference_host.ReferenceHost`; a host embedding notify
writes its own tables its own way.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import attrs
from psycopg.types.json import Jsonb

from notify_core.hints.levels import Level, Target, TargetKind
from notify_pg.db.errors import NotFound
from notify_pg.db.seam import Conn, Seam
from notify_pg.stores.events import EventLog, device_pending
from notify_pg.stores.store import NotifyStore
from notify_pg.stores.values import StoredPreference

__all__ = ["HostWrites"]


class HostWrites:
    """Writes to the reference host's tables (a part of `ReferenceHost`).

    Args:
        schema: the reference host's schema (set by `ReferenceHost`).
    """

    schema: str
    _seam: Seam

    def add_user(
        self,
        conn: Conn,
        user_id: str,
        *,
        kind: str = "human",
        time_zone: str | None = None,
        active: bool = True,
        owner: bool = False,
    ) -> None:
        """Create a person."""
        params = {
            "id": user_id,
            "kind": kind,
            "time_zone": time_zone,
            "active": active,
            "owner": owner,
        }
        self._seam.run(conn, "add_user", params)

    def set_time_zone(self, conn: Conn, user_id: str, time_zone: str | None) -> None:
        """Set or clear a person's zone (stored as given, not validated, like a legacy row)."""
        self._seam.run(conn, "set_time_zone", {"id": user_id, "time_zone": time_zone})

    def delete_user(self, conn: Conn, user_id: str, store: NotifyStore | None = None) -> None:
        """Remove a person; with ``store`` also what notify keeps about them (one transaction)."""
        with self._seam.transaction(conn):
            self._seam.run(conn, "delete_user", {"id": user_id})
            if store is not None:
                store.forget_person(conn, user_id)

    def add_space(self, conn: Conn, space_id: str) -> None:
        """Create a space."""
        self._seam.run(conn, "add_space", {"id": space_id})

    def add_channel(
        self,
        conn: Conn,
        channel_id: str,
        space_id: str | None,
        *,
        kind: str = "text",
        default_level: Level | str | None = None,
    ) -> None:
        """Create a channel; a direct-message channel (``kind="dm"``) has no space."""
        params = {
            "id": channel_id,
            "space_id": space_id,
            "kind": kind,
            "default_level": None if default_level is None else str(default_level),
        }
        self._seam.run(conn, "add_channel", params)

    def set_channel_default(
        self, conn: Conn, channel_id: str, default_level: Level | str | None
    ) -> None:
        """Set or clear (``None``) a channel's default level."""
        value = None if default_level is None else str(default_level)
        self._seam.run(conn, "set_channel_default", {"id": channel_id, "default_level": value})

    def add_thread(
        self, conn: Conn, thread_id: str, channel_id: str, *, main: bool = False
    ) -> None:
        """Create a thread."""
        self._seam.run(
            conn, "add_thread", {"id": thread_id, "channel_id": channel_id, "main": main}
        )

    def register_device(
        self,
        conn: Conn,
        device_id: str,
        user_id: str,
        platform: str,
        *,
        pending: bool,
        log: EventLog,
        occurred_at: datetime | None = None,
    ) -> int | None:
        """Register a device; a pending one appends ``device.pending`` in the same transaction.

        The only insert of a device row, as S4 asks of the host: a pending
        device gets exactly one ``device.pending`` (the source of the ``security`` hint to the
        person's other devices), an active one none, and a failure leaves neither.

        Returns:
            The event's ``seq`` for a pending device, else ``None``.

        Raises:
            NotifyError: the insert failed (unknown person, a device id registered already);
                nothing was written.
        """
        state = "pending" if pending else "active"
        params = {"id": device_id, "user_id": user_id, "platform": platform, "state": state}
        with self._seam.transaction(conn):
            self._seam.run(conn, "add_device", params)
            if not pending:
                return None
            event = attrs.evolve(
                device_pending(device_id, user_id, platform), occurred_at=occurred_at
            )
            return log.append(conn, event)

    def grant(self, conn: Conn, user_id: str, target: Target) -> None:
        """Give a person the read right on a space or channel."""
        self._seam.run(conn, "grant", _grant_params(user_id, target))

    def revoke(self, conn: Conn, user_id: str, target: Target) -> None:
        """Take a read right away."""
        self._seam.run(conn, "revoke", _grant_params(user_id, target))

    def add_dm_participant(self, conn: Conn, channel_id: str, user_id: str) -> None:
        """Make a person a participant of a direct-message channel."""
        self._seam.run(conn, "add_dm_participant", {"channel_id": channel_id, "user_id": user_id})

    def set_setting(self, conn: Conn, user_id: str, key: str, value: object) -> None:
        """Store a personal setting (any JSON value)."""
        self._seam.run(conn, "set_setting", {"user_id": user_id, "key": key, "value": Jsonb(value)})

    def delete_setting(self, conn: Conn, user_id: str, key: str) -> None:
        """Remove a personal setting."""
        self._seam.run(conn, "delete_setting", {"user_id": user_id, "key": key})

    def archive_channel(
        self, conn: Conn, channel_id: str, *, store: NotifyStore, actor: str | None = None
    ) -> list[StoredPreference]:
        """Archive a channel and remove its preferences in the same transaction.

        Returns:
            The removed preference rows (one event each).

        Raises:
            NotFound: no such channel, or it is archived already.
        """
        return self._archive(conn, "archive_channel", TargetKind.CHANNEL, channel_id, store, actor)

    def archive_space(
        self, conn: Conn, space_id: str, *, store: NotifyStore, actor: str | None = None
    ) -> list[StoredPreference]:
        """Archive a space and remove the preferences of it and everything below it.

        Raises:
            NotFound: no such space, or it is archived already.
        """
        return self._archive(conn, "archive_space", TargetKind.SPACE, space_id, store, actor)

    def _archive(
        self,
        conn: Conn,
        query: str,
        kind: TargetKind,
        target_id: str,
        store: NotifyStore,
        actor: str | None,
    ) -> list[StoredPreference]:
        with self._seam.transaction(conn):
            if self._seam.one(conn, query, {"id": target_id}) is None:
                raise NotFound()
            return store.remove_preferences_on_archive(
                conn, Target(kind=kind, id=target_id), actor=actor
            )


def _grant_params(user_id: str, target: Target) -> Mapping[str, str]:
    if target.kind is TargetKind.THREAD:
        raise ValueError("grants name a space or a channel")
    return {"user_id": user_id, "target_kind": target.kind.value, "target_id": target.id}
