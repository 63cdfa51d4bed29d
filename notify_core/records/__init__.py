"""Preference records as a pure store value: records are never changed, only superseded.

Rules: docs/rules.md#records (section 8). A `PreferenceStore` is an immutable value holding
every preference record ever made, indexed per principal. The three writes are pure
transitions that return ``(new_store, outcome)``; the three reads answer from the store alone::

    set(principal_ref, fields)  -> Ok(id) | Refused(invalid-request | undeclared-channel)
    suspend(preference_id)      -> Ok | Refused(not-known | not-active)
    delete(preference_id)       -> Ok | Refused(not-known | already-deleted)
    current_for(principal_ref)  -> the record currently in effect | None ("none")
    read(preference_id)         -> the whole record, deleted included | None ("not-known")
    in_effect_at(principal, t)  -> the record that governed t (Check 2.1, half-open 2.2)
    supersession_gaps(history, bound) -> each gap read against the bound (Check 4.1-4.2)
    check_failures(history)     -> what Check 3.1, 5.1 and 5.2 find wrong in stored records

Composed into delivery (M1-M6, `notify_core.records.delivery`)::

    rules_in_effect(record, t)            -> RecordInEffect | None (what notify reads, M2-M5)
    governing_record(store, principal, t) -> the record in effect at a delivery (M1)
    audit_delivery(history, channel=..., decided_at=..., sent_at=...) -> DeliveryAudit (M6)

Refusals are values, never exceptions: a refused write answers `Refused` and hands back the
very store it was given. What raises is a fault that must not become an outcome:
a caller's wrong type or naive datetime (`UsageError`, `NaiveDatetime`, rule G2) and the host's
faults at the seam - a degenerate declared channel set (`DegenerateChannelSet`, invariant 10)
or a blank or reused preference id (`InvalidPreferenceId`, invariant 8).
``storage-failure`` is a member of `Refusal` for the PostgreSQL adapter; the pure store never
answers it.

The host supplies ``now``, the new preference id and the declared channel set at the seam; no
guard reads ``now`` (Clock dependence 1-2), it is only stamped. Preference fields and metadata
are opaque JSON values, stored deeply frozen (tuples and `FrozenMap`) and never interpreted.
"""

from notify_core.records.checks import (
    CheckFailure,
    GapReading,
    SupersessionGap,
    check_failures,
    supersession_gaps,
)
from notify_core.records.delivery import (
    DeliveryAudit,
    RecordReading,
    audit_delivery,
    governing_record,
    rules_in_effect,
)
from notify_core.records.store import Ok, Outcome, PreferenceStore, Refused
from notify_core.records.values import (
    DegenerateChannelSet,
    InvalidPreferenceId,
    PreferenceRecord,
    Refusal,
    Status,
)
from notify_core.values.opaque import FrozenMap, Opaque, freeze_opaque, json_pointer_token
from notify_core.values.record_rules import (
    ChannelRule,
    DayCount,
    DeliveryChannel,
    RecordInEffect,
    RecordReason,
    channel_rule,
    local_day,
    next_local_midnight,
    verdict,
)

__all__ = [
    "ChannelRule",
    "CheckFailure",
    "DayCount",
    "DegenerateChannelSet",
    "DeliveryAudit",
    "DeliveryChannel",
    "FrozenMap",
    "GapReading",
    "InvalidPreferenceId",
    "Ok",
    "Opaque",
    "Outcome",
    "PreferenceRecord",
    "PreferenceStore",
    "RecordInEffect",
    "RecordReading",
    "RecordReason",
    "Refusal",
    "Refused",
    "Status",
    "SupersessionGap",
    "audit_delivery",
    "channel_rule",
    "check_failures",
    "freeze_opaque",
    "governing_record",
    "json_pointer_token",
    "local_day",
    "next_local_midnight",
    "rules_in_effect",
    "supersession_gaps",
    "verdict",
]
