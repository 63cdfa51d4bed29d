"""The event log: appending in commit order, and reading it back in the replay format.

Events are stored in the format of formats.md section 2 (``seq``, ``type``, ``occurred_at``,
``actor``?, ``audience``?, ``scope``?, ``payload``) with a wiki event's ``origin``? (section 4),
absent members as SQL ``NULL``; ``origin`` ``user`` is its default and stored as ``NULL`` too. Every
append first takes a transaction-scoped advisory lock of the log, so that the transaction that
appends first also commits first: ``seq`` order is commit order, a reader that has seen seq N
never later finds a smaller seq appearing, and ``occurred_at`` (the clock of the appending
transaction, never below the last one) never decreases along ``seq``. The price is that
appending transactions of one schema commit one after the other; append as late as possible
in a transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs
from psycopg.types.json import Jsonb

from notify_core.values.errors import UsageError
from notify_core.values.instants import format_instant, require_instant
from notify_pg.db.errors import LimitReached
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Seam

__all__ = ["EventLog", "NewEvent", "device_pending", "payload_size", "read_event_log"]

NOTIFICATION_PREF_UPDATED = "notification_pref.updated"
QUIET_HOURS_UPDATED = "quiet_hours.updated"


def payload_size(payload: Mapping[str, object]) -> int:
    """Return the size of a payload as the log bounds it: compact UTF-8 JSON, in bytes."""
    return len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode())


def _no_null(value: object, pointer: str) -> None:
    if value is None:
        raise UsageError("null_value", f"an event holds null at {pointer or '/'} (rule G5)")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _no_null(item, f"{pointer}/{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _no_null(item, f"{pointer}/{i}")


@attrs.frozen(kw_only=True)
class NewEvent:
    """An event to append.

    Args:
        type: the event type, e.g. ``notification_pref.updated``.
        payload: the JSON object of the event; no ``null`` anywhere (G5).
        actor: who caused it, if anyone.
        audience: the one person it is for (personal events), if any.
        scope: ``{"space"?, "channel"?, "thread"?}`` where it happened, if anywhere.
        origin: a wiki activity's ``user``, ``import`` or ``bulk`` (formats.md section 4);
            absent or ``user`` is stored as ``NULL`` and read back without the member.
        occurred_at: when it happened; absent: the database clock at the append. The log
            raises it to the last event's instant if it would go back.
    """

    type: str
    payload: Mapping[str, object]
    actor: str | None = None
    audience: str | None = None
    scope: Mapping[str, str] | None = None
    origin: str | None = None
    occurred_at: datetime | None = None

    def __attrs_post_init__(self) -> None:
        if not self.type:
            raise UsageError("invalid_event", "an event needs a type")
        _no_null(self.payload, "/payload")
        if self.scope is not None:
            _no_null(self.scope, "/scope")
        if self.occurred_at is not None:
            require_instant(self.occurred_at, "occurred_at")
        if self.origin not in (None, "user", "import", "bulk"):
            raise UsageError("invalid_event", "an event's origin is user, import or bulk")


def device_pending(device_id: str, user_id: str, platform: str) -> NewEvent:
    """Return the event a device registered as pending appends (S4).

    Append it in the transaction that inserts the device, exactly when the device is pending:
    it is the source of the ``security`` hint to the owner's other devices. It is personal
    (audience the owner) and carries only the device's id and platform.
    """
    return NewEvent(
        type="device.pending",
        payload={"device": device_id, "platform": platform},
        actor=user_id,
        audience=user_id,
    )


class EventLog:
    """Appends events to ``<schema>.event_log`` inside the caller's transaction.

    Args:
        schema: the library's schema.
        max_payload_bytes: the largest payload taken (`payload_size`); larger ones raise
            `LimitReached`.
    """

    def __init__(self, schema: str = DEFAULT_SCHEMA, *, max_payload_bytes: int = 65536) -> None:
        self.schema = schema
        self.max_payload_bytes = max_payload_bytes
        self._seam = Seam("notify_pg", schema)

    def check_size(self, payload: Mapping[str, object]) -> None:
        """Raise `LimitReached` when ``payload`` is larger than the bound."""
        if payload_size(payload) > self.max_payload_bytes:
            raise LimitReached()

    def last_instant(self, conn: Conn) -> datetime | None:
        """Return the newest event's ``occurred_at``, ``None`` for an empty log."""
        row = self._seam.one(conn, "last_event_at", {})
        if row is None:
            return None
        at: datetime = row[0]
        return at.astimezone(UTC)  # as a log's instants read, whatever the session's zone

    def append(self, conn: Conn, event: NewEvent) -> int:
        """Append one event and return its ``seq`` (see `append_many`)."""
        return self.append_many(conn, [event])[0]

    def append_many(self, conn: Conn, events: Sequence[NewEvent]) -> list[int]:
        """Append events in the given order and return their ``seq`` values.

        Runs in the caller's transaction (or a new one on an idle connection); the append lock
        is held until that transaction ends.

        Raises:
            LimitReached: a payload exceeds the bound; nothing is appended.
        """
        for event in events:
            self.check_size(event.payload)
        seqs: list[int] = []
        if not events:
            return seqs
        with self._seam.transaction(conn):
            self._seam.one(conn, "lock_event_log", {"schema": self.schema})
            if len(events) == 1:  # one statement, no pipeline to set up
                row = self._seam.one(conn, "append_event", _params(events[0]))
                assert row is not None
                rows = [row]
            else:
                rows = self._seam.one_each(conn, "append_event", [_params(e) for e in events])
        seqs.extend(int(row[0]) for row in rows)
        return seqs


def _params(event: NewEvent) -> dict[str, Any]:
    return {
        "type": event.type,
        "occurred_at": event.occurred_at,
        "actor": event.actor,
        "audience": event.audience,
        "scope": None if event.scope is None else Jsonb(dict(event.scope)),
        "payload": Jsonb(dict(event.payload)),
        # The default is not stored: a log without wiki imports reads back as it was written.
        "origin": None if event.origin == "user" else event.origin,
    }


def read_event_log(
    conn: Conn, schema: str = DEFAULT_SCHEMA, after_seq: int = 0, *, page_size: int = 1000
) -> Iterator[dict[str, object]]:
    """Yield the events after ``after_seq`` in ``seq`` order, as formats.md section 2 objects.

    Reads page by page (``page_size`` rows per query), so a long log is never held in memory.
    Absent members are omitted (``origin`` too when it is the default ``user``);
    ``occurred_at`` is RFC 3339 UTC text.

    Example:
        >>> for event in read_event_log(conn, "notify"):  # doctest: +SKIP
        ...     print(json.dumps(event))
    """
    seam = Seam("notify_pg", schema)
    last = after_seq
    while True:
        rows = seam.all(conn, "read_events", {"after_seq": last, "limit": page_size})
        for seq, type_, occurred_at, actor, audience, origin, scope, payload in rows:
            event: dict[str, object] = {
                "seq": seq,
                "type": type_,
                "occurred_at": format_instant(occurred_at),
            }
            if actor is not None:
                event["actor"] = actor
            if audience is not None:
                event["audience"] = audience
            if origin is not None:
                event["origin"] = origin
            if scope is not None:
                event["scope"] = scope
            event["payload"] = payload
            yield event
            last = seq
        if len(rows) < page_size:
            return
