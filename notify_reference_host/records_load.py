"""Apply the preference-record events of a log to ``preference_records`` (formats.md section 2).

``record.set`` / ``record.suspended`` / ``record.deleted`` (audience = the principal) are the
host's writes of preference records through
`notify_pg.stores.records.PreferenceRecordRepository`, at the event's instant (the host's
clock): the record governs from its ``set_at`` (M1). A refused transition (a named refusal of
docs/rules.md#records) is a bad line, as in a replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notify_core.events.log import Event, EventError
from notify_core.records import Refused
from notify_core.values.errors import NotifyError
from notify_pg.db.seam import Conn
from notify_pg.stores.records import PreferenceRecordRepository

__all__ = ["RECORD_EVENTS", "apply_record_event"]

#: The event types of preference records.
RECORD_EVENTS = frozenset({"record.set", "record.suspended", "record.deleted"})


def apply_record_event(repo: PreferenceRecordRepository, conn: Conn, event: Event) -> None:
    """Write one record event; a refused transition raises.

    Raises:
        EventError: the payload is malformed or the store refuses the transition.
    """
    p: Mapping[str, object] = event.payload
    preference_id = p.get("preference_id")
    if not isinstance(preference_id, str) or not preference_id:
        raise EventError(
            "invalid_member", "preference_id must be a non-empty string", "/payload/preference_id"
        )
    try:
        if event.type == "record.set":
            principal = event.audience
            if not principal:
                raise EventError("missing_member", "record.set needs an audience", "/audience")
            channels = p.get("channels")
            declared: Any = p.get("declared_channels")  # the core refuses what is not a set
            outcome = repo.set(
                conn,
                principal,
                now=event.occurred_at,
                preference_id=preference_id,
                declared_channels=declared,
                channel_preferences=channels
                if isinstance(channels, Mapping) and channels
                else None,
            )
        elif event.type == "record.suspended":
            outcome = repo.suspend(conn, preference_id, now=event.occurred_at)
        else:
            outcome = repo.delete(conn, preference_id, now=event.occurred_at)
    except EventError:
        raise
    except NotifyError as error:  # the host's faults at the seam: a bad line too
        raise EventError(error.code, error.message, "/payload" + (error.pointer or "")) from None
    if isinstance(outcome, Refused):
        raise EventError(
            "refused_transition",
            f"{event.type} refused: {outcome.refusal.value}",
            "/payload/preference_id",
        )
