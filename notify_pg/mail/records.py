"""The mail drain's preference records (docs/rules.md#records, M1-M6).

A pass reads, with the people's inbox choices and in the same query
(``mail_prefs_and_records_of``), the latest record each person set by now and the mails sent
to them since a day before that named a record. `MailRecords.check` answers for one mail the
checks of E4 let go, as the replay's drain does: its record (M6), or why it does not go:
``suspended`` and ``record_channel_off`` skip it, ``frequency_cap`` holds it to the person's
next local midnight (M4). A mail allowed is counted on the person's local day.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import attrs

from notify_core.records import (
    DeliveryChannel,
    RecordInEffect,
    RecordReason,
    local_day,
    verdict,
)
from notify_pg.stores.record_facts import governing, record_from_json

__all__ = ["MailRecords"]


@attrs.define
class MailRecords:
    """The records in effect of one pass's people and the mails counted per local day."""

    now: datetime
    #: Per person, the record in effect at the pass's instant (absent: none).
    records: dict[str, RecordInEffect] = attrs.field(factory=dict)
    #: Per person, the instants of the mails sent lately that named a record.
    sent: dict[str, list[datetime]] = attrs.field(factory=dict)

    def take(self, person: str, channel: str, value: object) -> bool:
        """Take one row of ``mail_prefs_and_records_of`` that is not an inbox choice; False
        for a choice (the caller's)."""
        if channel == "record":
            assert isinstance(value, list)
            found = governing([record_from_json(value)], self.now)
            if found is not None:
                self.records[person] = found
            return True
        if channel == "mail":
            assert isinstance(value, list)
            self.sent.setdefault(person, []).append(datetime.fromisoformat(str(value[0])))
            return True
        return False

    def check(
        self, person: str, time_zone: str | None
    ) -> tuple[RecordInEffect | None, RecordReason | None]:
        """The record that governs one mail to ``person`` now and, when it holds the mail
        back, why (M2-M4); an allowed mail is counted."""
        record = self.records.get(person)
        if record is None:
            return None, None
        day = local_day(self.now, time_zone)
        count = _on(self.sent.get(person, ()), day, time_zone)
        reason = verdict(record, DeliveryChannel.EMAIL, count)
        if reason is None:
            self.sent.setdefault(person, []).append(self.now)
        return record, reason


def _on(instants: Iterable[datetime], day: object, time_zone: str | None) -> int:
    return sum(1 for at in instants if local_day(at, time_zone) == day)
