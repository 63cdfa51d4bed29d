"""The audit of deliveries on PostgreSQL (docs/rules.md#records, M6).

Every push send and every mail names the record that governed it (``push_sends.record`` and
``push_deliveries.record``, ``inbox_entries.email_record``). `audit_one` answers for one
delivery (a push: a hint's notification id; a mail: an entry id): the record in effect at the
decision and at the send, reconstructed from the records' stamps (half-open intervals, M1),
its status then, and whether the delivery was allowed under it (the core's `audit_delivery`).
`deliveries_of` lists a person's deliveries over a period with their records, and the hints a
record held back (``push_holds``).

The cap (M4) is read against the deliveries made earlier in the person's local day: push
hints with a push send decided earlier that day (sends still pending or ended, kept for
``retention_days``), mails sent earlier that day.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, time, timedelta
from typing import Final

import attrs

from notify_core.records import (
    DeliveryAudit,
    PreferenceRecord,
    audit_delivery,
    local_day,
)
from notify_core.values.errors import InvalidInput
from notify_core.values.kinds import kind_from_code
from notify_core.values.zones import zone_or_utc
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Row, Seam
from notify_pg.stores.records import PreferenceRecordRepository

__all__ = [
    "Delivery",
    "DeliveryNotFound",
    "Hold",
    "audit_one",
    "deliveries_of",
    "find_delivery",
    "holds_of",
]

#: The prefixes of a delivery id: a push (a hint's notification id) or a mail (an entry id).
PUSH: Final = "push"
MAIL: Final = "mail"


class DeliveryNotFound(InvalidInput):
    """No push send and no mail has the id (code ``unknown_delivery``)."""


@attrs.frozen(kw_only=True)
class Delivery:
    """One delivery as stored: a push (all sends of one hint) or a mail (one entry's).

    Args:
        channel: ``push`` or ``email``.
        id: ``push:<notification id>`` or ``mail:<entry id>``.
        recipient: the person.
        kind: the hint's kind (push) or the entry's category (mail).
        decided_at: the hint's decision (push) or the entry's latest fan-out (mail).
        sent_at: the send (push: the latest end of its sends; mail: the drain), ``None``
            while pending.
        outcome: push: ``sent`` (one send at least), ``pending``, else the ends of its
            sends (``failed``, ``dropped``, ``skipped``); mail: the email state.
        reason: why it was skipped (push: the send-time reasons; mail: the drain's).
        decided_record: the record stored at the decision (push only).
        record: the record stored at the send (M6).
        registrations: the registrations of a push's sends.
    """

    channel: str
    id: str
    recipient: str
    kind: str
    decided_at: datetime
    sent_at: datetime | None
    outcome: str
    reason: str | None = None
    decided_record: str | None = None
    record: str | None = None
    registrations: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class Hold:
    """A hint a record left with no route at its decision (a skip, M2-M4)."""

    at: datetime
    kind: str
    thread: str | None
    reason: str
    record: str


def _seam(schema: str) -> Seam:
    return Seam("notify_pg", schema)


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


def _pushes(rows: Sequence[Row]) -> list[Delivery]:
    """Group push send rows by notification id (rows ordered by id within a hint)."""
    by_id: dict[str, list[Row]] = {}
    for row in rows:
        by_id.setdefault(str(row[0]), []).append(row)
    out = []
    for nid, group in by_id.items():
        outcomes = [str(r[9]) for r in group]
        if "sent" in outcomes:
            outcome = "sent"
        elif "pending" in outcomes:
            outcome = "pending"
        else:
            outcome = outcomes[0]
        ends = [r[7] for r in group if r[7] is not None]
        sent = [r for r in group if r[9] == "sent"]
        chosen = sent[0] if sent else group[0]
        reasons = sorted({str(r[10]) for r in group if r[10] is not None})
        out.append(
            Delivery(
                channel="push",
                id=f"{PUSH}:{nid}",
                recipient=str(group[0][2]),
                kind=kind_from_code(int(group[0][3])).value,
                decided_at=group[0][5].astimezone(UTC),
                sent_at=_utc(max(ends)) if ends and outcome != "pending" else None,
                outcome=outcome,
                reason=", ".join(reasons) or None,
                decided_record=group[0][6],
                record=chosen[8],
                registrations=tuple(str(r[1]) for r in group),
            )
        )
    return out


def _mail(row: Row) -> Delivery:
    entry, user, _site, category, updated_at, ended_at, state, skip, record = row
    ended = state in ("sent", "failed", "skipped")
    return Delivery(
        channel="email",
        id=f"{MAIL}:{entry}",
        recipient=str(user),
        kind=str(category),
        decided_at=updated_at.astimezone(UTC),
        sent_at=_utc(ended_at) if ended else None,
        outcome=str(state),
        # A sent mail a cap held before (M4) keeps that reason in the row, not in its answer.
        reason=skip if state != "sent" else None,
        record=record,
    )


def find_delivery(conn: Conn, delivery_id: str, *, schema: str = DEFAULT_SCHEMA) -> Delivery:
    """Find one delivery by id: ``push:<notification id>``, ``mail:<entry id>`` or either bare.

    Raises:
        DeliveryNotFound: no push send and no mail has the id, or a bare id names both.
        StorageError: the database failed.
    """
    seam = _seam(schema)
    prefix, _, rest = delivery_id.partition(":")
    if prefix in (PUSH, MAIL) and rest:
        wanted, key = [prefix], rest
    else:
        wanted, key = [PUSH, MAIL], delivery_id
    found: list[Delivery] = []
    if PUSH in wanted and "\x00" not in key:
        found.extend(_pushes(seam.all(conn, "push_delivery", {"id": key})))
    if MAIL in wanted and key.isascii() and key.isdigit() and len(key) < 19:
        row = seam.one(conn, "mail_delivery", {"id": int(key)})
        if row is not None:
            found.append(_mail(row))
    if not found:
        raise DeliveryNotFound(
            "unknown_delivery",
            f"no push send and no mail has the id {delivery_id!r} "
            "(push:<notification id> or mail:<entry id>)",
            "/delivery",
        )
    if len(found) > 1:
        raise DeliveryNotFound(
            "ambiguous_delivery",
            f"{delivery_id!r} names a push and a mail: write push:{key} or mail:{key}",
            "/delivery",
        )
    return found[0]


def _day_bounds(instant: datetime, time_zone: str | None) -> tuple[datetime, datetime]:
    """The person's local day of ``instant``, as a UTC interval [start, end)."""
    zone = zone_or_utc(time_zone)
    day = local_day(instant, time_zone)
    start = datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)
    end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone).astimezone(UTC)
    return start, end


def audit_one(
    conn: Conn,
    delivery: Delivery,
    *,
    time_zone: str | None = None,
    history: Sequence[PreferenceRecord] | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> tuple[DeliveryAudit, tuple[PreferenceRecord, ...]]:
    """Answer for one delivery (M6): the readings at its decision and its send; with the
    person's records (recording order). A pending delivery is read at its decision twice.

    Args:
        time_zone: the person's zone for the local day of the cap (``None``: UTC).
        history: the person's records in recording order, when read already.

    Raises:
        StorageError: the database failed.
    """
    seam = _seam(schema)
    if history is None:
        history = PreferenceRecordRepository(schema).history(conn, delivery.recipient)
    history = tuple(history)
    sent_at = delivery.sent_at or delivery.decided_at
    push = delivery.channel == "push"
    counted = "pushes_decided_between" if push else "mails_sent_between"

    def before(instant: datetime) -> int:
        start, _end = _day_bounds(instant, time_zone)
        row = seam.one(
            conn, counted, {"user_id": delivery.recipient, "start": start, "end": instant}
        )
        return int(row[0]) if row is not None else 0

    audit = audit_delivery(
        history,
        channel=delivery.channel,
        decided_at=delivery.decided_at,
        sent_at=sent_at,
        # The push cap applies at the hint's decision, the mail cap at the drain (M4).
        delivered_before_decision=before(delivery.decided_at) if push else 0,
        delivered_before_send=0 if push else before(sent_at),
    )
    return audit, history


def deliveries_of(
    conn: Conn,
    person: str,
    start: datetime,
    end: datetime,
    *,
    schema: str = DEFAULT_SCHEMA,
) -> list[Delivery]:
    """A person's pushes decided and mails sent (or skipped) in [start, end), oldest first.

    Raises:
        StorageError: the database failed.
    """
    if "\x00" in person:
        return []
    seam = _seam(schema)
    params = {"user_id": person, "start": start, "end": end}
    pushes = _pushes(seam.all(conn, "push_deliveries_of", params))
    mails = [_mail(row) for row in seam.all(conn, "mails_of", params)]
    return sorted([*pushes, *mails], key=_when)


def _when(delivery: Delivery) -> tuple[datetime, str]:
    return (delivery.sent_at or delivery.decided_at, delivery.id)


def holds_of(
    conn: Conn, person: str, start: datetime, end: datetime, *, schema: str = DEFAULT_SCHEMA
) -> list[Hold]:
    """The hints of a person a record held back in [start, end) (M2-M4), oldest first.

    Raises:
        StorageError: the database failed.
    """
    if "\x00" in person:
        return []
    rows = _seam(schema).all(conn, "push_holds_of", {"user_id": person, "start": start, "end": end})
    return [
        Hold(
            at=at.astimezone(UTC),
            kind=kind_from_code(int(kind)).value,
            thread=thread,
            reason=str(reason),
            record=str(record),
        )
        for at, kind, thread, reason, record in rows
    ]
