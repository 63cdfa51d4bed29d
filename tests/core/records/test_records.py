"""Tests of the preference store as a value (rules.md#records, section 8, seed 002).

The seed's case table row by row, its worked examples and the faults shared with the
PostgreSQL repository are the records contract, run on both twins
(tests/pg/contracts/test_records_contract.py). Here: what only the pure value has (its
refusal reserved for the adapter, frozen opaque values, stamps of a backward clock read as
given, wrong types, `from_records`, the record's own checks, supersession gaps and
`check_failures`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest

from notify_core.records import (
    CheckFailure,
    FrozenMap,
    GapReading,
    InvalidPreferenceId,
    Ok,
    PreferenceRecord,
    PreferenceStore,
    Refusal,
    Refused,
    SupersessionGap,
    check_failures,
    freeze_opaque,
    supersession_gaps,
)
from notify_core.values.errors import NaiveDatetime, NotifyError, UsageError

DECLARED = ["email", "sms", "push", "in-app"]
T1 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
T2 = T1 + timedelta(days=21)
T3 = T2 + timedelta(days=10)
T4 = T3 + timedelta(days=14)
T5 = T4 + timedelta(days=30)


def put(
    store: PreferenceStore, principal: str, pid: str, now: datetime, **fields: object
) -> PreferenceStore:
    """Set and insist it was accepted."""
    new, outcome = store.set(
        principal,
        now=now,
        preference_id=pid,
        declared_channels=DECLARED,
        **fields,  # type: ignore[arg-type]
    )
    assert outcome == Ok(preference_id=pid)
    return new


def one(store: PreferenceStore, pid: str) -> PreferenceRecord:
    record = store.read(pid)
    assert record is not None
    return record


EMPTY = PreferenceStore()
ONE = put(EMPTY, "user_u", "pref_001", T1, channel_preferences={"email": "digest"})


# -- the case table, row by row --------------------------------------------------------------


def test_storage_failure_is_reserved_for_the_adapter() -> None:
    """Store refuses: Storage Failure - a named refusal the adapter answers (Operation 16, 23,
    29); the pure store never does, and a refused write hands back its store (Operation 30)."""
    assert Refusal.STORAGE_FAILURE == "storage-failure"
    assert Refused(refusal="storage-failure").refusal is Refusal.STORAGE_FAILURE


# -- the worked examples -------------------------------------------------------------------


# -- values, stamps and faults ----------------------------------------------------------------


def test_opaque_values_are_stored_as_supplied_and_frozen() -> None:
    """The atom interprets nothing (Operation 10-11) and a caller's copy can't change the
    store (Invariant 1.2-1.3, Non-goal 32); "" and {} are stated values, not blanks."""
    limit: dict[str, object] = {"per_day": 10, "days": ["mon", "tue"]}
    channels = {"email": {"mode": "digest"}}
    store = put(
        EMPTY, "u", "p1", T1, frequency_limit=limit, channel_preferences=channels, format=""
    )
    limit["per_day"] = 99
    channels["email"]["mode"] = "off"
    record = one(store, "p1")
    assert record.frequency_limit == FrozenMap({"per_day": 10, "days": ("mon", "tue")})
    assert record.channel_preferences == {"email": {"mode": "digest"}}
    assert record.format == ""
    assert hash(record) == hash(one(store, "p1"))  # records are hashable values
    only_empty_object = put(EMPTY, "u", "p1", T1, quiet_hours={})
    assert one(only_empty_object, "p1").quiet_hours == {}


def test_stamps_follow_the_injected_now_even_backwards() -> None:
    """No guard reads now (Clock dependence 1-2): an earlier now is stamped as given; the
    temporal properties are the host's (Temporal property 5)."""
    store, outcome = ONE.suspend("pref_001", now=T1 - timedelta(hours=1))
    assert outcome.ok
    assert one(store, "pref_001").suspended_at == T1 - timedelta(hours=1)


def test_in_effect_at_prefers_the_later_record_when_a_backward_clock_overlaps() -> None:
    store = put(ONE, "user_u", "p2", T1 - timedelta(days=1), format="plain")
    # pref_001 is [T1, T1 - 1 day) = empty; p2 is [T1 - 1 day, inf)
    assert store.in_effect_at("user_u", T1) == one(store, "p2")
    # The audit reports the record whose own stamps went back (Temporal property 2).
    assert not one(store, "pref_001").stamps_in_order and one(store, "p2").stamps_in_order


def test_stamps_in_order_checks_temporal_properties_1_to_3() -> None:
    suspended, _ = ONE.suspend("pref_001", now=T2)
    assert one(suspended, "pref_001").stamps_in_order
    early_delete, _ = suspended.delete("pref_001", now=T2 - timedelta(seconds=1))
    assert not one(early_delete, "pref_001").stamps_in_order  # Temporal property 3
    early_suspend, _ = ONE.suspend("pref_001", now=T1 - timedelta(seconds=1))
    assert not one(early_suspend, "pref_001").stamps_in_order  # Temporal property 1
    same, _ = ONE.delete("pref_001", now=T1)
    assert one(same, "pref_001").stamps_in_order  # equal instants are in order


@pytest.mark.parametrize(
    "call",
    [
        lambda: EMPTY.set(
            42,  # type: ignore[arg-type]
            format="x",
            now=T1,
            preference_id="p",
            declared_channels=DECLARED,
        ),
        lambda: EMPTY.set("u", format="x", now=T1, preference_id="p", declared_channels="email"),
        lambda: EMPTY.set("u", format="x", now=T1, preference_id="p", declared_channels=[1]),
        lambda: EMPTY.set(
            "u",
            channel_preferences=["email"],  # type: ignore[arg-type]
            now=T1,
            preference_id="p",
            declared_channels=DECLARED,
        ),
        lambda: EMPTY.set(
            "u", format={1, 2}, now=T1, preference_id="p", declared_channels=DECLARED
        ),
        lambda: EMPTY.set(
            "u", format=float("nan"), now=T1, preference_id="p", declared_channels=DECLARED
        ),
        lambda: EMPTY.set(
            "u", format={"a": None}, now=T1, preference_id="p", declared_channels=DECLARED
        ),
        lambda: ONE.read(1),  # type: ignore[arg-type]
        lambda: ONE.current_for(None),  # type: ignore[arg-type]
        lambda: ONE.suspend(None, now=T2),  # type: ignore[arg-type]
        lambda: PreferenceStore.from_records(["pref_001"]),  # type: ignore[list-item]
    ],
)
def test_wrong_types_raise_usage_errors(call: object) -> None:
    with pytest.raises(UsageError) as info:
        call()  # type: ignore[operator]
    assert info.value.code in {"invalid_type", "invalid_opaque_value", "null_value"}


def test_freeze_opaque_pointer_names_the_culprit() -> None:
    with pytest.raises(UsageError) as info:
        freeze_opaque({"a": [1, None]}, "/format")
    assert (info.value.code, info.value.pointer) == ("null_value", "/format/a/1")


def test_from_records_round_trip_and_duplicate_ids() -> None:
    store = put(ONE, "user_u", "pref_088", T2, format="plain")
    copy = PreferenceStore.from_records(store.records.values())
    assert copy == store
    assert copy.current_for("user_u") == one(store, "pref_088")
    with pytest.raises(InvalidPreferenceId) as info:
        PreferenceStore.from_records([one(store, "pref_001"), one(store, "pref_001")])
    assert info.value.pointer == "/1/preference_id"


def test_record_validates_its_own_fields() -> None:
    with pytest.raises(NotifyError) as info:
        PreferenceRecord(
            preference_id="p",
            principal_ref="u",
            declared_channels=["email"],
            set_at=T1,
            status="paused",
        )
    assert (info.value.code, info.value.pointer) == ("invalid_status", "/status")
    with pytest.raises(NaiveDatetime):
        PreferenceRecord(
            preference_id="p",
            principal_ref="u",
            declared_channels=["email"],
            set_at=datetime(2026, 1, 1),
            status="active",
        )


# -- supersession gaps (Check 4.1-4.2) ------------------------------------------------------


def test_supersession_gaps_read_against_the_bound() -> None:
    """Check 4.1: a gap within the bound reads as a supersession; Check 4.2: beyond it, the
    records cannot tell a supersession from a delete and a later set: ambiguous."""
    store = put(ONE, "user_u", "pref_088", T2, format="plain")  # set: gap 0
    store, outcome = store.delete("pref_088", now=T3)
    assert outcome.ok
    store = put(store, "user_u", "pref_141", T3 + timedelta(seconds=5), format="plain")
    store, _ = store.delete("pref_141", now=T4)
    store = put(store, "user_u", "pref_200", T4 + timedelta(hours=2), format="plain")
    history = store.history("user_u")
    assert supersession_gaps(history, timedelta(0)) == (
        SupersessionGap(
            prior="pref_001", successor="pref_088", gap=timedelta(0), reading="supersession"
        ),
        SupersessionGap(
            prior="pref_088",
            successor="pref_141",
            gap=timedelta(seconds=5),
            reading=GapReading.AMBIGUOUS,
        ),
        SupersessionGap(
            prior="pref_141",
            successor="pref_200",
            gap=timedelta(hours=2),
            reading=GapReading.AMBIGUOUS,
        ),
    )
    readings = [g.reading for g in supersession_gaps(history, timedelta(seconds=5))]
    assert readings == ["supersession", "supersession", "ambiguous"]
    readings = [g.reading for g in supersession_gaps(history, timedelta(hours=2))]
    assert readings == ["supersession"] * 3


def test_supersession_gap_of_a_backward_clock_and_of_no_deletion() -> None:
    """A successor stamped before its predecessor's deletion is marked backward (Temporal
    property 5), never a supersession; a record with no deletion has no gap; a principal with
    one record or none has no gaps."""
    store, _ = ONE.delete("pref_001", now=T1 + timedelta(hours=1))
    store = put(store, "user_u", "pref_088", T1 + timedelta(minutes=59), format="plain")
    [gap] = supersession_gaps(store.history("user_u"), timedelta(days=365))
    assert gap.reading is GapReading.BACKWARD and gap.gap == timedelta(minutes=-1)
    assert supersession_gaps(ONE.history("user_u"), timedelta(0)) == ()
    assert supersession_gaps((), timedelta(0)) == ()
    # Two records in effect (a store that breaks Invariant 3): no gap between them.
    a, b = one(ONE, "pref_001"), attrs.evolve(one(ONE, "pref_001"), preference_id="p2")
    assert supersession_gaps([a, b], timedelta(0)) == ()


@pytest.mark.parametrize("bound", [timedelta(seconds=-1), 0, None, "PT0S"])
def test_supersession_gap_bound_must_be_a_timedelta_of_zero_or_more(bound: object) -> None:
    with pytest.raises(UsageError) as info:
        supersession_gaps(ONE.history("user_u"), bound)  # type: ignore[arg-type]
    assert info.value.code == "invalid_bound" and info.value.pointer == "/bound"
    with pytest.raises(UsageError) as info:
        supersession_gaps(["pref_001"], timedelta(0))  # type: ignore[list-item]
    assert info.value.pointer == "/0"


# -- Check 3.1, 5.1, 5.2 over stored records -------------------------------------------------


def test_check_failures_of_records_the_store_never_writes() -> None:
    """The store's own history clears every check; records loaded as another writer stored
    them are reported: two in effect (3.1), an undeclared key (5.1), empty declared channels
    (5.2)."""
    store = put(ONE, "user_u", "pref_088", T2, format="plain")
    assert check_failures(store.history("user_u")) == ()
    first = one(ONE, "pref_001")
    rogue = attrs.evolve(
        first,
        preference_id="p2",
        declared_channels=["sms"],
        channel_preferences={"email": "x", "sms": "y", "fax": "z"},
    )
    empty = attrs.evolve(first, preference_id="p3", declared_channels=[], status="deleted",
                         deleted_at=T2)  # fmt: skip
    assert check_failures([first, rogue, empty]) == (
        CheckFailure(check="3.1", preference_ids=("pref_001", "p2")),
        CheckFailure(check="5.1", preference_ids=("p2",), channel="email"),
        CheckFailure(check="5.1", preference_ids=("p2",), channel="fax"),
        CheckFailure(check="5.2", preference_ids=("p3",)),
        CheckFailure(check="5.1", preference_ids=("p3",), channel="email"),
    )
    with pytest.raises(UsageError) as info:
        check_failures([first, "p2"])  # type: ignore[list-item]
    assert info.value.pointer == "/1"


def test_check_errors_carry_code_message_and_pointer() -> None:
    """The auditor's functions say what is wrong, where."""
    with pytest.raises(UsageError) as bound:
        supersession_gaps((), timedelta(seconds=-1))
    assert (bound.value.code, bound.value.message, bound.value.pointer) == (
        "invalid_bound",
        "the supersession gap bound must be a timedelta of zero or more",
        "/bound",
    )
    first = one(ONE, "pref_001")
    for check in (lambda h: supersession_gaps(h, timedelta(0)), check_failures):
        with pytest.raises(UsageError) as info:
            check([first, first, 7])
        assert (info.value.code, info.value.message, info.value.pointer) == (
            "invalid_type",
            "not a PreferenceRecord: int",
            "/2",
        )


def test_a_gap_exactly_at_the_bound_is_a_supersession() -> None:
    """Check 4.1: ``gap <= bound``, to the microsecond."""
    store, _ = ONE.delete("pref_001", now=T2)
    store = put(store, "user_u", "pref_088", T2 + timedelta(microseconds=1), format="plain")
    history = store.history("user_u")
    [at] = supersession_gaps(history, timedelta(microseconds=1))
    [past] = supersession_gaps(history, timedelta(0))
    assert (at.reading, past.reading) == (GapReading.SUPERSESSION, GapReading.AMBIGUOUS)


def test_a_record_still_in_effect_does_not_end_the_reading() -> None:
    """A record not deleted (the pair has no gap) is skipped, and the pairs after it are
    still read."""
    store = put(ONE, "user_u", "pref_088", T2, format="plain")
    rogue = attrs.evolve(one(ONE, "pref_001"), preference_id="p0")
    store, _ = store.delete("pref_088", now=T3)
    deleted = one(store, "pref_088")
    successor = attrs.evolve(deleted, preference_id="p9", status="active", deleted_at=None,
                             set_at=T3)  # fmt: skip
    gaps = supersession_gaps([rogue, deleted, successor], timedelta(0))
    assert [(g.prior, g.successor, g.reading) for g in gaps] == [
        ("pref_088", "p9", GapReading.SUPERSESSION)
    ]
