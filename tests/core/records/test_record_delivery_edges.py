"""The edges of the records' delivery rules (M1-M6): what `nox -s mutants -- record_delivery`
showed no test read (issue 41).

The errors field by field (code, message, pointer), the defaults of the day counts, a cap of
exactly one, the local midnight of a day that starts in a gap and its zone (UTC whatever the
machine's), the rule of each channel, and the audit's answers compared with `verdict` on
every reading.
"""

from __future__ import annotations

import time as clock
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.records import (
    ChannelRule,
    DayCount,
    DeliveryChannel,
    PreferenceRecord,
    RecordInEffect,
    RecordReason,
    Status,
    audit_delivery,
    channel_rule,
    local_day,
    next_local_midnight,
    rules_in_effect,
    verdict,
)
from notify_core.values.errors import NaiveDatetime, UsageError

T = datetime(2026, 3, 2, 9, tzinfo=UTC)
NAIVE = datetime(2026, 3, 2, 9)
PUSH, EMAIL = DeliveryChannel.PUSH, DeliveryChannel.EMAIL


def _stored(**kw: object) -> PreferenceRecord:
    base: dict[str, object] = {
        "preference_id": "p1",
        "principal_ref": "u",
        "status": "active",
        "declared_channels": ["push", "email"],
        "set_at": T,
    }
    return PreferenceRecord(**{**base, **kw})  # type: ignore[arg-type]


class TestErrors:
    """Each error names what is wrong and where: code, message and pointer."""

    def test_audit_unknown_channel(self) -> None:
        with pytest.raises(UsageError) as e:
            audit_delivery([], channel="sms", decided_at=T, sent_at=T)
        assert (e.value.code, e.value.pointer) == ("unknown_channel", "/channel")
        assert e.value.message == "not a delivery channel: 'sms'"

    def test_audit_a_history_item_that_is_not_a_record(self) -> None:
        with pytest.raises(UsageError) as e:
            audit_delivery([_stored(), "p2"], channel="push", decided_at=T, sent_at=T)  # type: ignore[list-item]
        assert (e.value.code, e.value.pointer) == ("invalid_type", "/1")
        assert e.value.message == "not a PreferenceRecord: str"

    @pytest.mark.parametrize("which", ["decided_at", "sent_at"])
    def test_audit_a_naive_instant_is_named(self, which: str) -> None:
        instants = {"decided_at": T, "sent_at": T, which: NAIVE}
        with pytest.raises(NaiveDatetime) as e:
            audit_delivery([], channel="push", **instants)
        assert e.value.message == f"{which} is a naive datetime: give it a time zone"

    def test_m4_local_day_and_midnight_name_the_naive_instant(self) -> None:
        for read in (local_day, next_local_midnight):
            with pytest.raises(NaiveDatetime) as e:
                read(NAIVE, "Europe/Berlin")
            assert e.value.message == "instant is a naive datetime: give it a time zone"

    def test_m4_a_day_count_does_not_go_back(self) -> None:
        counted = DayCount().plus_one(date(2026, 3, 1))
        with pytest.raises(UsageError) as e:
            counted.plus_one(date(2026, 2, 28))
        assert (e.value.code, e.value.pointer) == ("day_went_back", "/day")
        assert e.value.message == "2026-02-28 is before 2026-03-01"


class TestBoundaries:
    def test_m4_a_cap_of_one_is_read(self) -> None:
        assert channel_rule({"max_per_day": 1}, "push") == (ChannelRule(max_per_day=1), ())
        assert channel_rule({"max_per_day": 0}, "push") == (ChannelRule(), ("/push/max_per_day",))

    def test_m4_nothing_delivered_yet_by_default(self) -> None:
        once = RecordInEffect(preference_id="p1", push=ChannelRule(max_per_day=1))
        assert verdict(once, PUSH) is None
        assert verdict(once, PUSH, 1) is RecordReason.FREQUENCY_CAP
        r = _stored(channel_preferences={"push": {"max_per_day": 1}})
        assert audit_delivery([r], channel="push", decided_at=T, sent_at=T).allowed

    def test_m3_the_rule_of_each_channel(self) -> None:
        off, capped = ChannelRule(enabled=False), ChannelRule(max_per_day=2)
        r = RecordInEffect(preference_id="p1", push=off, email=capped)
        assert (r.rule(PUSH), r.rule(EMAIL)) == (off, capped)

    def test_m4_a_day_that_starts_in_a_gap(self) -> None:
        # Chile moves its clocks from 00:00 to 01:00 on 2026-09-06: the day starts at 01:00
        # local (-03), the instant 00:00 local would have been (-04).
        saturday_noon = datetime(2026, 9, 5, 16, tzinfo=UTC)
        first = next_local_midnight(saturday_noon, "America/Santiago")
        assert first == datetime(2026, 9, 6, 4, tzinfo=UTC)
        assert local_day(first, "America/Santiago") == date(2026, 9, 6)

    @pytest.mark.parametrize(
        ("noon", "midnight"),
        [
            (datetime(2026, 3, 28, 12, tzinfo=UTC), datetime(2026, 3, 28, 23, tzinfo=UTC)),
            (datetime(2026, 3, 29, 12, tzinfo=UTC), datetime(2026, 3, 29, 22, tzinfo=UTC)),
            (datetime(2026, 10, 24, 12, tzinfo=UTC), datetime(2026, 10, 24, 22, tzinfo=UTC)),
            (datetime(2026, 10, 25, 12, tzinfo=UTC), datetime(2026, 10, 25, 23, tzinfo=UTC)),
        ],
    )
    def test_m4_midnight_across_dst(self, noon: datetime, midnight: datetime) -> None:
        assert next_local_midnight(noon, "Europe/Berlin") == midnight


@pytest.fixture
def machine_in_tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local zone set to Asia/Tokyo for one test."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    clock.tzset()
    yield
    monkeypatch.undo()
    clock.tzset()


@pytest.mark.usefixtures("machine_in_tokyo")
def test_m4_next_local_midnight_is_in_utc_whatever_the_machine() -> None:
    midnight = next_local_midnight(datetime(2026, 3, 1, 22, 30, tzinfo=UTC), "Europe/Berlin")
    assert midnight.isoformat() == "2026-03-01T23:00:00+00:00"
    assert midnight.tzinfo == UTC


channel_values = st.one_of(
    st.none(),
    st.just("weekly"),
    st.fixed_dictionaries(
        {},
        optional={
            "enabled": st.one_of(st.booleans(), st.just("no")),
            "max_per_day": st.one_of(st.integers(-1, 3), st.just(True)),
            "format": st.sampled_from(["plain", "rich", "html"]),
        },
    ),
)


@given(
    push=channel_values,
    email=channel_values,
    channel=st.sampled_from(list(DeliveryChannel)),
    suspended_after=st.sampled_from([None, -1, 0, 1]),
    before_decision=st.integers(0, 3),
    before_send=st.integers(0, 3),
)
def test_audit_answers_as_verdict_reads_each_instant(
    push: object,
    email: object,
    channel: DeliveryChannel,
    suspended_after: int | None,
    before_decision: int,
    before_send: int,
) -> None:
    # One record, suspended a minute before, at or after the send (or never); the decision a
    # minute before the send. Each reading is the verdict of the record in effect then.
    values = {k: v for k, v in (("push", push), ("email", email)) if v is not None}
    sent_at = T + timedelta(minutes=2)
    kw: dict[str, object] = {"channel_preferences": values}
    if suspended_after is not None:
        kw |= {"status": "suspended", "suspended_at": sent_at + timedelta(minutes=suspended_after)}
    r = _stored(**kw)
    decided_at = sent_at - timedelta(minutes=1)
    audit = audit_delivery(
        [r],
        channel=channel.value,
        decided_at=decided_at,
        sent_at=sent_at,
        delivered_before_decision=before_decision,
        delivered_before_send=before_send,
    )
    assert audit.channel is channel
    readings = []
    for reading, at, before in (
        (audit.at_decision, decided_at, before_decision),
        (audit.at_send, sent_at, before_send),
    ):
        rules = rules_in_effect(r, at)
        assert reading is not None and rules is not None
        assert reading.preference_id == "p1"
        assert reading.status is (Status.SUSPENDED if rules.suspended else Status.ACTIVE)
        assert reading.reason is verdict(rules, channel, before)
        assert reading.not_applied == rules.not_applied
        readings.append(reading.allowed)
    assert audit.allowed is all(readings)
