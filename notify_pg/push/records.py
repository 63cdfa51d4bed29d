"""`PgRecords`: the pipeline's `notify_core.values.record_rules.RecordFacts` on PostgreSQL.

The records of the people a fan-out decides for are read with their quiet rules (one query,
`notify_pg.stores.facts.FactsReader.quiet_rules`), so no statement is added per event; the
record in effect at a decision is found among them by their stamps (M1, half-open intervals).
The push deliveries of a person per local day (M4) come with them (``push_day_counts``); the
deliveries the transaction counts are added up in the `Session` and written at its end
(`write_record_rows`), with the hints a record left with no route (``push_holds``, M6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Final

from notify_core.hints.decide import Skip
from notify_core.hints.pipeline import Hint
from notify_core.records import DeliveryChannel, RecordInEffect, RecordReason
from notify_core.values.kinds import kind_code
from notify_pg.db.seam import Seam
from notify_pg.push.session import Session
from notify_pg.stores.facts import FactsReader
from notify_pg.stores.record_facts import governing

__all__ = ["PgRecords", "held_hints", "write_record_rows"]

#: The skip reasons of a record (M2-M4), written to ``push_holds``.
_HELD: Final = frozenset(r.value for r in RecordReason)


class PgRecords:
    """`RecordFacts` of one transaction's session (the push pipeline; the mail drain counts
    its own mails).

    Args:
        session: the transaction's session.
        facts: the batched reader of quiet rules, records and day counts.
    """

    def __init__(self, session: Session, facts: FactsReader) -> None:
        self._s = session
        self._facts = facts

    def records_in_effect(
        self, users: Sequence[str], now: datetime
    ) -> Mapping[str, RecordInEffect]:
        """Return the record in effect at ``now`` of each of ``users`` who has one (M1)."""
        s = self._s
        missing = [p for p in dict.fromkeys(users) if p not in s.records]
        if missing:
            found = self._facts.quiet_rules(
                s.conn, missing, zones=False, records=s.records, days=s.push_days
            )
            for person in missing:
                facts = found.get(person)
                s.quiet.setdefault(person, facts.rules if facts is not None else ())
        out = {}
        for person in users:
            history = s.records.get(person)
            if history:
                record = governing(history, now)
                if record is not None:
                    out[person] = record
                    s.record_at[(person, now)] = record.preference_id
        return out

    def deliveries_on(self, user: str, channel: DeliveryChannel, day: date) -> int:
        """Return the push deliveries that named a record on a local ``day`` (M4)."""
        return self._s.push_days.get((user, day), 0) if channel is DeliveryChannel.PUSH else 0

    def count_delivery(self, user: str, channel: DeliveryChannel, day: date) -> None:
        """Count one push delivery that named a record on a local ``day`` (M4)."""
        if channel is not DeliveryChannel.PUSH:
            return
        key = (user, day)
        self._s.push_days[key] = self._s.push_days.get(key, 0) + 1
        self._s.push_days_added[key] += 1


def held_hints(session: Session, hints: Sequence[Hint]) -> list[dict[str, object]]:
    """The rows of ``push_holds`` for the hints a record left with no route (M2-M4)."""
    rows: list[dict[str, object]] = []
    for hint in hints:
        decision = hint.decision
        if type(decision) is Skip and decision.reason.value in _HELD:
            record = session.record_at.get((hint.recipient, hint.at))
            if record is not None:
                rows.append(
                    {
                        "recipient": hint.recipient,
                        "at": hint.at,
                        "kind": kind_code(hint.kind),
                        "thread": hint.thread,
                        "reason": decision.reason.value,
                        "record": record,
                    }
                )
    return rows


def write_record_rows(
    seam: Seam, session: Session, holds: Sequence[dict[str, object]] = ()
) -> None:
    """Write the transaction's push deliveries per day and the hints records held back, one
    statement each, only when there are any."""
    added = session.push_days_added
    if added:
        keys = sorted(added)
        seam.run(
            session.conn,
            "add_push_day_counts",
            {
                "recipients": [person for person, _day in keys],
                "days": [day for _person, day in keys],
                "counts": [added[key] for key in keys],
            },
        )
        added.clear()
    if holds:
        seam.run(
            session.conn,
            "insert_push_holds",
            {name: [row[name] for row in holds] for name in _HOLD_COLUMNS},
        )


_HOLD_COLUMNS: Final = ("recipient", "at", "kind", "thread", "reason", "record")
