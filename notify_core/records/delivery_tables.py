"""Decision-table functions of records composed into delivery (formats.md section 1, M1-M6).

``record_delivery`` - whether one more delivery may go to a principal at an instant, under
the record of their stored history in effect then (M1-M4). Input ``{"records": [record...],
"principal_ref", "channel": "push"|"email", "at", "delivered_today"?: n}``; expect
``{"allowed": bool, "reason"?, "record"?, "status"?, "plain"?: true, "not_applied"?:
[pointers]}`` (``record`` and ``status``: the record in effect, absent when none is;
``plain``: an email value asks for the text body only, M5).

``record_audit`` - the audit of one delivery (M6). Input ``{"records", "principal_ref",
"channel", "decided_at", "sent_at", "delivered_before_decision"?, "delivered_before_send"?}``;
expect ``{"allowed", "at_decision"?, "at_send"?}``, each reading ``{"record", "status",
"allowed", "reason"?, "not_applied"?}``, absent when no record was in effect.

``record_local_day`` - the local day of a cap and when a capped mail goes (M4). Input
``{"at", "time_zone"?}``; expect ``{"day": "YYYY-MM-DD", "next_midnight"}``.

Records are the objects of `notify_core.records.tables` (``records_in_effect_at``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from notify_core.records.delivery import RecordReading, audit_delivery, rules_in_effect
from notify_core.records.store import PreferenceStore
from notify_core.records.tables import _check_members, _text, record_from_json
from notify_core.records.values import PreferenceRecord
from notify_core.values.errors import InvalidInput, NotifyError
from notify_core.values.instants import format_instant, parse_instant
from notify_core.values.record_rules import (
    DeliveryChannel,
    local_day,
    next_local_midnight,
    verdict,
)
from notify_core.values.zones import validate_time_zone

__all__ = ["DELIVERY_FUNCTIONS", "record_audit", "record_delivery", "record_local_day"]


def _history(case: Mapping[str, object]) -> tuple[PreferenceRecord, ...]:
    records = case["records"]
    if not isinstance(records, list):
        raise InvalidInput("invalid_type", "records must be an array", "/records")
    loaded = [record_from_json(r, f"/records/{i}") for i, r in enumerate(records)]
    try:
        store = PreferenceStore.from_records(loaded)
    except NotifyError as err:
        raise err.at("/records") from None
    return store.history(_text(case["principal_ref"], "/principal_ref"))


def _channel(value: object) -> DeliveryChannel:
    if value not in ("push", "email"):
        raise InvalidInput("invalid_channel", f"not a delivery channel: {value!r}", "/channel")
    return DeliveryChannel(str(value))


def _count(case: Mapping[str, object], name: str) -> int:
    value = case.get(name, 0)
    if type(value) is not int or value < 0:
        raise InvalidInput("invalid_count", f"{name} must be an integer >= 0", f"/{name}")
    return value


def record_delivery(case: Mapping[str, object]) -> dict[str, object]:
    """Decide one more delivery under the record in effect (see module doc).

    Raises:
        NotifyError: invalid input, pointing into ``case``.
    """
    _check_members(
        case,
        frozenset({"records", "principal_ref", "channel", "at"}),
        frozenset({"delivered_today"}),
        "",
    )
    history = _history(case)
    channel = _channel(case["channel"])
    at = parse_instant(case["at"], "/at")
    delivered = _count(case, "delivered_today")
    rules = None
    for record in reversed(history):
        rules = rules_in_effect(record, at)
        if rules is not None:
            break
    reason = verdict(rules, channel, delivered)
    out: dict[str, object] = {"allowed": reason is None}
    if reason is not None:
        out["reason"] = reason.value
    if rules is not None:
        out["record"] = rules.preference_id
        out["status"] = "suspended" if rules.suspended else "active"
        if channel is DeliveryChannel.EMAIL and rules.email.plain:
            out["plain"] = True
        if rules.not_applied:
            out["not_applied"] = list(rules.not_applied)
    return out


def _reading(reading: RecordReading | None) -> dict[str, object] | None:
    if reading is None:
        return None
    out: dict[str, object] = {
        "record": reading.preference_id,
        "status": reading.status.value,
        "allowed": reading.allowed,
    }
    if reading.reason is not None:
        out["reason"] = reading.reason.value
    if reading.not_applied:
        out["not_applied"] = list(reading.not_applied)
    return out


def record_audit(case: Mapping[str, object]) -> dict[str, object]:
    """Audit one delivery (see module doc).

    Raises:
        NotifyError: invalid input, pointing into ``case``.
    """
    _check_members(
        case,
        frozenset({"records", "principal_ref", "channel", "decided_at", "sent_at"}),
        frozenset({"delivered_before_decision", "delivered_before_send"}),
        "",
    )
    audit = audit_delivery(
        _history(case),
        channel=_channel(case["channel"]),
        decided_at=parse_instant(case["decided_at"], "/decided_at"),
        sent_at=parse_instant(case["sent_at"], "/sent_at"),
        delivered_before_decision=_count(case, "delivered_before_decision"),
        delivered_before_send=_count(case, "delivered_before_send"),
    )
    out: dict[str, object] = {"allowed": audit.allowed}
    for name, reading in (("at_decision", audit.at_decision), ("at_send", audit.at_send)):
        answer = _reading(reading)
        if answer is not None:
            out[name] = answer
    return out


def record_local_day(case: Mapping[str, object]) -> dict[str, object]:
    """The person's local day at an instant and the next local midnight (see module doc).

    Raises:
        NotifyError: invalid input (an unknown zone: ``unknown_time_zone``).
    """
    _check_members(case, frozenset({"at"}), frozenset({"time_zone"}), "")
    at = parse_instant(case["at"], "/at")
    zone = case.get("time_zone")
    if zone is not None:
        validate_time_zone(zone)
    name = None if zone is None else str(zone)
    return {
        "day": local_day(at, name).isoformat(),
        "next_midnight": format_instant(next_local_midnight(at, name)),
    }


#: The table functions of this module, by the name a case's ``function`` member gives.
DELIVERY_FUNCTIONS: Final[dict[str, Callable[[Mapping[str, object]], dict[str, object]]]] = {
    "record_delivery": record_delivery,
    "record_audit": record_audit,
    "record_local_day": record_local_day,
}
