"""Preference records as facts of delivery on PostgreSQL (docs/rules.md#records, M1).

The push worker and the mail drain read the records of the people they decide for inside the
batched statements they run anyway (the quiet rules of a fan-out, the claim of push sends, the
claim of mails): each record comes as one JSON array of the columns of ``preference_records``
(`RECORD_JSON`). `record_from_json` turns it into the core's `PreferenceRecord`, and
`governing` into the `RecordInEffect` of an instant (M1: half-open intervals of the stamps).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from notify_core.records import PreferenceRecord, RecordInEffect, rules_in_effect

__all__ = ["RECORD_JSON", "governing", "in_effect_at", "record_from_json"]

#: The columns of a record in the JSON array the queries build, in this order.
RECORD_JSON: Final = (
    "preference_id",
    "principal_ref",
    "declared_channels",
    "set_at",
    "status",
    "channel_preferences",
    "frequency_limit",
    "quiet_hours",
    "format",
    "metadata",
    "suspended_at",
    "deleted_at",
)


def _instant(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(str(value)).astimezone(UTC)


def record_from_json(value: Sequence[Any]) -> PreferenceRecord:
    """A record from the JSON array of its columns (`RECORD_JSON` order)."""
    (
        preference_id,
        principal_ref,
        declared_channels,
        set_at,
        status,
        channel_preferences,
        frequency_limit,
        quiet_hours,
        format_,
        metadata,
        suspended_at,
        deleted_at,
    ) = value
    set_instant = _instant(set_at)
    assert set_instant is not None
    return PreferenceRecord(
        preference_id=preference_id,
        principal_ref=principal_ref,
        declared_channels=declared_channels,
        set_at=set_instant,
        status=status,
        channel_preferences=channel_preferences,
        frequency_limit=frequency_limit,
        quiet_hours=quiet_hours,
        format=format_,
        metadata=metadata,
        suspended_at=_instant(suspended_at),
        deleted_at=_instant(deleted_at),
    )


def in_effect_at(history: Iterable[PreferenceRecord], instant: datetime) -> PreferenceRecord | None:
    """The record of a person's history in effect at ``instant`` (latest recorded first)."""
    found = None
    for record in history:
        if record.in_effect_at(instant):
            found = record
    return found


def governing(history: Iterable[PreferenceRecord], instant: datetime) -> RecordInEffect | None:
    """The record that governs a delivery at ``instant`` as the core reads it (M1-M5)."""
    record = in_effect_at(history, instant)
    return None if record is None else rules_in_effect(record, instant)
