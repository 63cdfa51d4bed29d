"""Apply the world events of a log to the reference host (tests, the benchmark, the demo).

A replay learns its world from the log (`notify_core.hints.memory.MemoryStore.record`). To run the
same log on PostgreSQL, `apply_world_event` writes what each world event of formats.md
section 2 changes: the reference host's tables (people, places, rights, devices, presence,
read positions, also moved by a person's own message (B3), mentions, thread positions,
settings) and notify's own rows that a logged ``notification_pref.updated``,
``quiet_hours.updated``, ``push.registered`` or ``record.*`` (preference records, M1) leaves
(written without a new event: the logged event is the one). It mirrors the in-memory store:
rows that would name an unknown person, channel or device are left out, as the store ignores
them.
Call it in the transaction that appends the event, as a host changes its tables in the
transaction that appends the event about the change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from psycopg.types.json import Jsonb

from notify_core.events.log import Event, EventError
from notify_core.hints.levels import parse_level
from notify_core.hints.quiet import rule_from_json
from notify_core.values.instants import parse_instant
from notify_pg.db.ids import new_id
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Seam
from notify_pg.stores.records import PreferenceRecordRepository
from notify_reference_host import DEFAULT_HOST_SCHEMA
from notify_reference_host.records_load import apply_record_event

__all__ = ["WorldLoader"]


class WorldLoader:
    """Writes the world events of a log into the reference host and notify's tables.

    Args:
        schema: notify's schema.
        host_schema: the reference host's schema.
    """

    def __init__(
        self, schema: str = DEFAULT_SCHEMA, host_schema: str = DEFAULT_HOST_SCHEMA
    ) -> None:
        self._notify = Seam("notify_pg", schema)
        self._host = Seam("notify_reference_host", host_schema)
        self._records = PreferenceRecordRepository(schema)

    @staticmethod
    def handles(event_type: str) -> bool:
        """Whether events of this type change the reference host's chat world."""
        return event_type in _HANDLERS

    def apply(self, conn: Conn, event: Event) -> None:
        """Write what ``event`` changes in the world (nothing for activity events).

        Raises:
            EventError: a logged preference or quiet rule the store would refuse.
        """
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, conn, event, event.payload)

    # --- handlers --------------------------------------------------------------------------

    def _user(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        self._host.run(
            conn,
            "merge_user",
            {
                "id": p["user"],
                "kind": p.get("kind"),
                "time_zone": p.get("time_zone"),
                "clear_time_zone": "time_zone" in _strings(p.get("unset")),
                "active": p.get("active"),
                "owner": p.get("owner"),
            },
        )

    def _space_created(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        self._host.run(conn, "ensure_space", {"id": p["space"]})

    def _space_archived(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        self._host.run(conn, "mark_space_archived", {"id": p["space"]})

    def _channel_created(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        space = p.get("space")
        if space is not None:
            self._host.run(conn, "ensure_space", {"id": space})
        self._host.run(
            conn,
            "put_channel",
            {
                "id": p["channel"],
                "space_id": space,
                "kind": p["kind"],
                "default_level": p.get("default_notification_level"),
            },
        )
        for person in _strings(p.get("participants", [])):
            self._host.run(
                conn, "put_dm_participant", {"channel_id": p["channel"], "user_id": person}
            )

    def _channel_updated(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        if p.get("clear_default_notification_level"):
            params = {"id": p["channel"], "default_level": None}
            self._host.run(conn, "set_channel_default", params)
        if "default_notification_level" in p:
            params = {"id": p["channel"], "default_level": p["default_notification_level"]}
            self._host.run(conn, "set_channel_default", params)

    def _channel_archived(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        self._host.run(conn, "mark_channel_archived", {"id": p["channel"]})

    def _thread_created(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        params = {"id": p["thread"], "channel_id": p["channel"], "main": bool(p["main"])}
        self._host.run(conn, "put_thread", params)

    def _grant(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        target = p["target"]
        assert isinstance(target, dict)
        params = {"user_id": p["user"], "target_kind": target["kind"], "target_id": target["id"]}
        if event.type == "access.granted":
            self._host.run(conn, "put_grant", params)
        else:
            self._host.run(conn, "revoke", params)

    def _device_registered(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        state = "active" if p["state"] == "active" else "pending"
        self._host.run(
            conn,
            "put_device",
            {"id": p["device"], "user_id": p["user"], "platform": p["platform"], "state": state},
        )

    def _device_approved(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        self._host.run(conn, "set_device_state", {"id": p["device"], "state": "active"})

    def _device_revoked(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        self._host.run(conn, "set_device_state", {"id": p["device"], "state": "revoked"})
        self._host.run(conn, "delete_presence", {"device_id": p["device"]})

    def _push_registered(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        owner = self._host.one(conn, "device_owner", {"id": p["device"]})
        if owner is None:
            return
        registration = str(p["registration"])
        self._notify.run(
            conn,
            "register_push",
            {
                "id": registration,
                "user_id": owner[0],
                "device_id": p["device"],
                "auth_session_id": "session-" + registration,
                "provider": p["provider"],
                "token": "token-" + registration,
                "environment": "production",
                "app_id": "app",
                "created_at": event.occurred_at,
            },
        )

    def _push_unregistered(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        self._notify.run(conn, "remove_push", {"id": p["registration"]})

    def _presence(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        if p["connected"]:
            self._host.run(
                conn,
                "put_presence",
                {
                    "device_id": p["device"],
                    "focus": _strings(p.get("focus", [])),
                    "idle": bool(p.get("idle", False)),
                },
            )
        else:
            self._host.run(conn, "delete_presence", {"device_id": p["device"]})

    def _preference(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        pref = p["preference"]
        assert isinstance(pref, dict)
        target = pref.get("target")
        if not isinstance(target, dict) or target.get("kind") not in ("space", "channel", "thread"):
            raise EventError(
                "invalid_member", "preference.target must be {kind, id}", "/payload/preference"
            )
        key = {"user_id": event.audience, "target_kind": target["kind"], "target_id": target["id"]}
        if p.get("deleted"):
            self._notify.run(conn, "unload_preference", key)
            return
        try:
            level = parse_level(pref.get("level"), "/payload/preference/level")
            until = pref.get("muted_until")
            muted = (
                None if until is None else parse_instant(until, "/payload/preference/muted_until")
            )
        except EventError:
            raise
        except Exception as error:  # NotifyError: re-raised as an event error
            code = getattr(error, "code", "invalid_member")
            raise EventError(code, str(error), getattr(error, "pointer", None)) from None
        version = pref.get("version", 1)
        params = {**key, "level": level.value, "muted_until": muted, "version": version}
        self._notify.run(conn, "load_preference", params)

    def _quiet_hours(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        raw = p["rules"]
        assert isinstance(raw, list)
        rows: list[dict[str, Any]] = []
        for index, obj in enumerate(raw):
            try:
                rule = rule_from_json(obj)
            except Exception as error:
                code = getattr(error, "code", "invalid_member")
                pointer = f"/payload/rules/{index}" + (getattr(error, "pointer", None) or "")
                raise EventError(code, str(error), pointer) from None
            rows.append(
                {
                    "id": str(obj.get("id") or new_id()),
                    "user_id": event.audience,
                    "weekdays": rule.weekdays,
                    "start_local": rule.start_local,
                    "end_local": rule.end_local,
                    "time_zone": rule.time_zone,
                    "enabled": rule.enabled,
                    "version": obj.get("version", 1),
                }
            )
        self._notify.run(conn, "unload_quiet_hours", {"user_id": event.audience})
        self._notify.run_many(conn, "load_quiet_rule", rows)

    def _record(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        apply_record_event(self._records, conn, event)

    def _settings(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        if event.audience is None:
            return
        key = {"user_id": event.audience, "key": p["key"]}
        if p.get("deleted") or "value" not in p:
            self._host.run(conn, "delete_setting", key)
        else:
            self._host.run(conn, "set_setting", {**key, "value": Jsonb(p["value"])})

    def _message(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        thread, seq = p["thread"], p["thread_seq"]
        author = p["author"]
        if p["kind"] not in ("run", "system"):
            params = {"id": thread, "seq": seq, "message": p["message"]}
            self._host.run(conn, "advance_thread", params)
            # B3: as a chat server does, the author's own message is read by its author.
            params = {"user_id": author, "thread_id": thread, "seq": seq}
            self._host.run(conn, "advance_read_state", params)
        for person in _strings(p.get("mention_ids", [])):
            if person != author:
                params = {"user_id": person, "thread_id": thread, "seq": seq}
                self._host.run(conn, "add_mention", params)

    def _read_state(self, conn: Conn, event: Event, p: Mapping[str, object]) -> None:
        if event.audience is None:
            return
        params = {"user_id": event.audience, "thread_id": p["thread"], "seq": p["last_read_seq"]}
        self._host.run(conn, "put_read_state", params)


def _strings(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


_Handler = Callable[[WorldLoader, Conn, Event, Mapping[str, object]], None]

_HANDLERS: Final[dict[str, _Handler]] = {
    "user.created": WorldLoader._user,
    "user.updated": WorldLoader._user,
    "space.created": WorldLoader._space_created,
    "space.archived": WorldLoader._space_archived,
    "channel.created": WorldLoader._channel_created,
    "channel.updated": WorldLoader._channel_updated,
    "channel.archived": WorldLoader._channel_archived,
    "thread.created": WorldLoader._thread_created,
    "access.granted": WorldLoader._grant,
    "access.revoked": WorldLoader._grant,
    "device.registered": WorldLoader._device_registered,
    "device.approved": WorldLoader._device_approved,
    "device.revoked": WorldLoader._device_revoked,
    "push.registered": WorldLoader._push_registered,
    "push.unregistered": WorldLoader._push_unregistered,
    "presence.changed": WorldLoader._presence,
    "notification_pref.updated": WorldLoader._preference,
    "quiet_hours.updated": WorldLoader._quiet_hours,
    "settings.updated": WorldLoader._settings,
    "message.created": WorldLoader._message,
    "read_state.updated": WorldLoader._read_state,
    "record.set": WorldLoader._record,
    "record.suspended": WorldLoader._record,
    "record.deleted": WorldLoader._record,
}
