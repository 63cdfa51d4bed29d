"""Example tests of the preference store (rules.md#records, section 8, seed 002).

One test per row of the seed's case table (Set, Suspend, Delete, either write, Current For,
Read), the worked examples (onboarding, vacation suspend, account closure, rejection paths,
the regulator audit and the disputed delivery), and the faults that raise instead of answering
(degenerate channel set, host id faults, caller mistakes).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import attrs
import pytest

from notify_core.records import (
    CheckFailure,
    DegenerateChannelSet,
    FrozenMap,
    GapReading,
    InvalidPreferenceId,
    Ok,
    PreferenceRecord,
    PreferenceStore,
    Refusal,
    Refused,
    Status,
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


def test_set_without_prior_records_one_active_record() -> None:
    """Set, no prior: the new id; one record lands in Active (Operation 1-3, State 2, 11)."""
    store, outcome = EMPTY.set(
        "user_u",
        channel_preferences={"email": "digest"},
        metadata={"form": 3},
        now=T1,
        preference_id="pref_001",
        declared_channels=DECLARED,
    )
    assert outcome == Ok(preference_id="pref_001")
    assert outcome.ok is True
    assert list(store.records) == ["pref_001"]
    assert one(store, "pref_001") == PreferenceRecord(
        preference_id="pref_001",
        principal_ref="user_u",
        declared_channels=DECLARED,
        set_at=T1,
        status=Status.ACTIVE,
        channel_preferences={"email": "digest"},
        metadata={"form": 3},
    )
    assert EMPTY.records == {}  # the old value is untouched


def test_set_with_prior_supersedes_in_one_transition() -> None:
    """Set with a prior in effect: new Active, prior Deleted at the same now (Operation 14-15,
    State 12, Invariant 4.1)."""
    store, outcome = ONE.set(
        "user_u", format="plain", now=T2, preference_id="pref_088", declared_channels=DECLARED
    )
    assert outcome == Ok(preference_id="pref_088")
    prior, new = one(store, "pref_001"), one(store, "pref_088")
    assert prior.status is Status.DELETED and prior.deleted_at == T2
    assert new.status is Status.ACTIVE and new.set_at == T2
    assert store.current_for("user_u") == new
    assert one(ONE, "pref_001").status is Status.ACTIVE  # the old store still says so


@pytest.mark.parametrize(
    ("principal", "fields", "pointer"),
    [
        ("", {"format": "plain"}, "/principal_ref"),  # Operation 4
        ("user_u", {}, None),  # Operation 5
        ("user_u", {"metadata": {"form": 3}}, None),  # Operation 12: metadata is no field
        ("user_u", {"channel_preferences": {}}, None),  # Operation 6
        ("", {}, "/principal_ref"),  # the principal is checked first
        ("", {"channel_preferences": {"carrier-pigeon": "x"}}, "/principal_ref"),  # Operation 9
        ("user_u", {"channel_preferences": {}, "metadata": "m"}, None),
    ],
)
def test_set_invalid_request(principal: str, fields: dict[str, object], pointer: str) -> None:
    """Blank principal, no preference field, or an empty map as the only one: Invalid Request,
    and the very store handed back (Operation 4-6, 9, 30; Invariant 4.3-4.4)."""
    store, outcome = ONE.set(
        principal,
        now=T2,
        preference_id="pref_002",
        declared_channels=DECLARED,
        **fields,  # type: ignore[arg-type]
    )
    assert outcome == Refused(refusal=Refusal.INVALID_REQUEST, pointer=pointer)
    assert outcome.ok is False
    assert store is ONE


def test_set_undeclared_channel() -> None:
    """A key outside the injected set: Undeclared Channel, nothing written (Operation 8)."""
    store, outcome = ONE.set(
        "user_u",
        channel_preferences={"email": "preferred", "carrier-pigeon": "backup", "fax": "x"},
        now=T2,
        preference_id="pref_002",
        declared_channels=DECLARED,
    )
    assert outcome == Refused(
        refusal=Refusal.UNDECLARED_CHANNEL, pointer="/channel_preferences/carrier-pigeon"
    )
    assert store is ONE
    assert store.current_for("user_u") == one(ONE, "pref_001")  # Invariant 4.3


def test_undeclared_channel_pointer_is_escaped() -> None:
    _, outcome = EMPTY.set(
        "u",
        channel_preferences={"a/b~c": 1},
        now=T1,
        preference_id="p",
        declared_channels=["email"],
    )
    assert outcome == Refused(
        refusal=Refusal.UNDECLARED_CHANNEL, pointer="/channel_preferences/a~1b~0c"
    )


@pytest.mark.parametrize(
    ("declared", "pointer"),
    [
        ([], "/declared_channels"),
        (["email", "sms", "email"], "/declared_channels/2"),
        (["email", ""], "/declared_channels/1"),
        ((), "/declared_channels"),
    ],
)
def test_set_degenerate_channel_set_fails_stop(declared: list[str], pointer: str) -> None:
    """Degenerate injected set: no conforming outcome, nothing validated or written
    (Instance 11, 13-16) - even for a request that would be refused."""
    requests = [("user_u", {"format": "plain"}), ("", {}), ("u", {"carrier-pigeon": 1})]
    for principal, channels in requests:
        with pytest.raises(DegenerateChannelSet) as info:
            ONE.set(
                principal,
                now=T2,
                preference_id="pref_002",
                declared_channels=declared,
                channel_preferences=channels,
            )
        assert info.value.code == "degenerate_channel_set"
        assert info.value.pointer == pointer
        assert isinstance(info.value, NotifyError)
    assert list(ONE.records) == ["pref_001"]


def test_suspend_active() -> None:
    """Suspend on Active: ok, Suspended, suspension instant stamped, values kept
    (Operation 20-22, State 9, Invariant 6)."""
    store, outcome = ONE.suspend("pref_001", now=T2)
    assert outcome == Ok(preference_id="pref_001")
    assert one(store, "pref_001") == attrs.evolve(
        one(ONE, "pref_001"), status=Status.SUSPENDED, suspended_at=T2
    )


@pytest.mark.parametrize("first", ["suspend", "delete"])
def test_suspend_not_active(first: str) -> None:
    """Suspend on Suspended or Deleted: Not Active, store unchanged (Operation 18-19)."""
    store, _ = getattr(ONE, first)("pref_001", now=T2)
    again, outcome = store.suspend("pref_001", now=T3)
    assert outcome == Refused(refusal=Refusal.NOT_ACTIVE)
    assert again is store


@pytest.mark.parametrize("suspended", [False, True])
def test_delete_active_or_suspended(suspended: bool) -> None:
    """Delete on Active or Suspended: ok, Deleted, deletion instant stamped, record kept
    (Operation 26-27, State 10, Invariant 2.2, 9)."""
    store = ONE.suspend("pref_001", now=T2)[0] if suspended else ONE
    deleted, outcome = store.delete("pref_001", now=T3)
    assert outcome == Ok(preference_id="pref_001")
    record = one(deleted, "pref_001")
    assert record.status is Status.DELETED
    assert record.deleted_at == T3
    assert record.suspended_at == (T2 if suspended else None)  # State 6: kept
    assert deleted.current_for("user_u") is None


def test_delete_deleted() -> None:
    """Delete on Deleted: Already Deleted, nothing changes (Operation 25)."""
    store, _ = ONE.delete("pref_001", now=T2)
    again, outcome = store.delete("pref_001", now=T3)
    assert outcome == Refused(refusal=Refusal.ALREADY_DELETED)
    assert again is store
    assert one(again, "pref_001").deleted_at == T2  # Invariant 1.6


@pytest.mark.parametrize("pid", ["pref_404", "", "PREF_001", "pref_001 "])
@pytest.mark.parametrize("write", ["suspend", "delete"])
def test_write_on_unknown_id(pid: str, write: str) -> None:
    """Either write on an id naming nothing, blank included: Not Known (Operation 17, 24)."""
    store, outcome = getattr(ONE, write)(pid, now=T2)
    assert outcome == Refused(refusal=Refusal.NOT_KNOWN)
    assert store is ONE


def test_storage_failure_is_reserved_for_the_adapter() -> None:
    """Store refuses: Storage Failure - a named refusal the adapter answers (Operation 16, 23,
    29); the pure store never does, and a refused write hands back its store (Operation 30)."""
    assert Refusal.STORAGE_FAILURE == "storage-failure"
    assert Refused(refusal="storage-failure").refusal is Refusal.STORAGE_FAILURE


def test_current_for_answers_the_record_in_effect_in_full() -> None:
    """Current For with a record in effect: that record, in full, suspended included
    (Operation 31, 37; Invariant 7)."""
    assert ONE.current_for("user_u") == one(ONE, "pref_001")
    suspended, _ = ONE.suspend("pref_001", now=T2)
    assert suspended.current_for("user_u") == one(suspended, "pref_001")


@pytest.mark.parametrize("principal", ["", "user_v", "User_U", "user_u ", " user_u"])
def test_current_for_none(principal: str) -> None:
    """Current For with nothing in effect, blank included: None; exact match only
    (Operation 32-33, Identity 9-10)."""
    assert ONE.current_for(principal) is None
    deleted, _ = ONE.delete("pref_001", now=T2)
    assert deleted.current_for("user_u") is None


def test_read_any_state() -> None:
    """Read: the whole record in any state, Deleted included (Operation 34-35, Invariant 9.3)."""
    deleted, _ = ONE.delete("pref_001", now=T2)
    record = deleted.read("pref_001")
    assert record is not None and record.status is Status.DELETED


@pytest.mark.parametrize("pid", ["", "pref_404"])
def test_read_not_known(pid: str) -> None:
    """Read on an id naming nothing, blank included: not-known, answered as None (Operation 36)."""
    assert ONE.read(pid) is None


# -- the worked examples -------------------------------------------------------------------


def lifecycle() -> PreferenceStore:
    """The first step of user_u's chain pref_001 -> pref_088 -> pref_141: onboarding."""
    store = put(
        EMPTY,
        "user_u",
        "pref_001",
        T1,
        channel_preferences={"email": "digest", "push": "real-time", "sms": "opt-out"},
        format="plain",
    )
    return store


def test_onboarding_then_update() -> None:
    """Consumer SaaS: pref_001 in Active, then pref_088 supersedes it (seed 002 Examples)."""
    store = lifecycle()
    assert one(store, "pref_001").status is Status.ACTIVE
    assert store.current_for("user_u") == one(store, "pref_001")
    store = put(
        store,
        "user_u",
        "pref_088",
        T2,
        channel_preferences={"email": "digest", "push": "real-time", "sms": "urgent-only"},
        frequency_limit={"per_day": 10},
        format="plain",
    )
    assert one(store, "pref_001").status is Status.DELETED
    assert one(store, "pref_001").deleted_at == T2
    current = store.current_for("user_u")
    assert current is not None and current.preference_id == "pref_088"
    assert current.frequency_limit == {"per_day": 10}
    assert current.quiet_hours is None  # State 4: omitted stays absent


def test_vacation_suspend_and_resume_by_replay() -> None:
    """Marketing platform: suspend pref_088, current_for still answers it; the replay set
    pref_141 retires it keeping its suspension and set instants (Invariant 6, Resumption)."""
    store = put(
        lifecycle(),
        "user_u",
        "pref_088",
        T2,
        channel_preferences={"email": "digest", "push": "real-time", "sms": "urgent-only"},
        frequency_limit={"per_day": 10},
        format="plain",
    )
    store, outcome = store.suspend("pref_088", now=T3)
    assert outcome == Ok(preference_id="pref_088")
    paused = store.current_for("user_u")
    assert paused is not None and paused.status is Status.SUSPENDED
    store, outcome = store.set(
        "user_u",
        channel_preferences=paused.channel_preferences,
        frequency_limit=paused.frequency_limit,
        format=paused.format,
        now=T4,
        preference_id="pref_141",
        declared_channels=DECLARED,
    )
    assert outcome == Ok(preference_id="pref_141")
    old = one(store, "pref_088")
    assert (old.status, old.set_at, old.suspended_at, old.deleted_at) == (
        Status.DELETED,
        T2,
        T3,
        T4,
    )
    new = one(store, "pref_141")
    assert new.channel_preferences == paused.channel_preferences
    assert new.suspended_at is None  # State 7


def test_account_closure_keeps_the_whole_chain() -> None:
    """Account closure: delete(pref_141) -> ok, current_for none, all three records remain
    in chronological order (Invariant 9, Check 1.1)."""
    store = put(lifecycle(), "user_u", "pref_088", T2, format="plain")
    store, _ = store.suspend("pref_088", now=T3)
    store = put(store, "user_u", "pref_141", T4, format="plain")
    store, outcome = store.delete("pref_141", now=T5)
    assert outcome == Ok(preference_id="pref_141")
    assert store.current_for("user_u") is None
    assert [r.preference_id for r in store.history("user_u")] == [
        "pref_001",
        "pref_088",
        "pref_141",
    ]
    assert all(r.status is Status.DELETED for r in store.history("user_u"))
    # Rejection paths of the same chain.
    assert store.suspend("pref_001", now=T5)[1] == Refused(refusal=Refusal.NOT_ACTIVE)
    assert store.delete("pref_141", now=T5)[1] == Refused(refusal=Refusal.ALREADY_DELETED)


def test_rejection_path_set_carrying_nothing() -> None:
    """set(principal_ref: user_u) -> invalid-request; no id issued, nothing stored (Op. 5)."""
    store, outcome = EMPTY.set(
        "user_u", now=T1, preference_id="pref_001", declared_channels=DECLARED
    )
    assert outcome == Refused(refusal=Refusal.INVALID_REQUEST)
    assert store.records == {}
    # the id was not consumed: the host may hand it out again
    assert put(store, "user_u", "pref_001", T1, format="plain").read("pref_001") is not None


def test_rejection_path_carrier_pigeon() -> None:
    """set(user_v, {email, carrier-pigeon}) -> undeclared-channel (Operation 8)."""
    _, outcome = EMPTY.set(
        "user_v",
        channel_preferences={"email": "preferred", "carrier-pigeon": "backup"},
        now=T1,
        preference_id="pref_200",
        declared_channels=DECLARED,
    )
    assert outcome.ok is False
    assert isinstance(outcome, Refused) and outcome.refusal == "undeclared-channel"


def test_regulator_audit_half_open_intervals() -> None:
    """CAN-SPAM audit: pref_201 governs [2025-08-01, 2026-03-14), pref_244 from then on
    (Check 2.1-2.2: at the supersession instant the successor governs)."""
    t201 = datetime(2025, 8, 1, tzinfo=UTC)
    t244 = datetime(2026, 3, 14, tzinfo=UTC)
    store = put(EMPTY, "user_v", "pref_201", t201, channel_preferences={"email": "preferred"})
    store = put(store, "user_v", "pref_244", t244, channel_preferences={"email": "opt-out"})
    us = timedelta(microseconds=1)

    def governing(at: datetime) -> str | None:
        record = store.in_effect_at("user_v", at)
        return None if record is None else record.preference_id

    assert governing(t201 - us) is None
    assert governing(t201) == "pref_201"
    assert governing(t244 - us) == "pref_201"
    assert governing(t244) == "pref_244"
    assert governing(datetime(2027, 1, 1, tzinfo=UTC)) == "pref_244"
    assert store.in_effect_at("user_u", t244) is None
    # any offset is the same instant
    assert governing(t244.astimezone(timezone(timedelta(hours=1)))) == "pref_244"


def test_disputed_delivery_reconstruction() -> None:
    """TCPA: which record was in effect at 23:30, then read(preference_id) shows the quiet
    hours; a suspended record still governs and tells its status at the instant."""
    quiet = {"start": "22:00", "end": "07:00", "timezone": "America/Los_Angeles"}
    store = put(EMPTY, "user_w", "pref_300", T1, quiet_hours=quiet)
    store, _ = store.suspend("pref_300", now=T3)
    store, _ = store.delete("pref_300", now=T5)
    at = T2 + timedelta(hours=14, minutes=30)
    record = store.in_effect_at("user_w", at)
    assert record is not None
    assert one(store, record.preference_id).quiet_hours == quiet
    assert record.status_at(at) is Status.ACTIVE
    assert record.status_at(T3) is Status.SUSPENDED
    assert record.status_at(T5) is Status.DELETED
    assert record.status_at(T1 - timedelta(seconds=1)) is None
    assert store.in_effect_at("user_w", T4) == record  # suspended still governs
    assert store.in_effect_at("user_w", T5) is None


# -- values, stamps and faults ----------------------------------------------------------------


def test_channel_set_evolution_is_visible_only_forward() -> None:
    """Each record keeps the set it was validated against (Invariant 5.3, 10, Channel set
    evolution 1-3); a replay of a withdrawn channel is refused (Resumption 3-4)."""
    store = put(EMPTY, "u", "p1", T1, channel_preferences={"sms": "urgent"})
    store, outcome = store.set(
        "u",
        channel_preferences={"sms": "urgent"},
        now=T2,
        preference_id="p2",
        declared_channels=["email", "push"],
    )
    assert outcome == Refused(
        refusal=Refusal.UNDECLARED_CHANNEL, pointer="/channel_preferences/sms"
    )
    store, _ = store.set(
        "u", format="rich", now=T2, preference_id="p2", declared_channels=["email", "push"]
    )
    assert one(store, "p1").declared_channels == frozenset(DECLARED)
    assert one(store, "p2").declared_channels == {"email", "push"}


def test_empty_channel_map_is_stored_absent() -> None:
    """Operation 6-7, State 4: an empty map beside another field is stored as absent."""
    store = put(EMPTY, "u", "p1", T1, channel_preferences={}, format="plain")
    assert one(store, "p1").channel_preferences is None


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


def test_principal_is_matched_exactly() -> None:
    """Identity 8-11: nothing is trimmed or folded; "user_u " is another principal."""
    store = put(ONE, "user_u ", "p2", T2, format="plain")
    assert one(store, "pref_001").status is Status.ACTIVE
    assert store.current_for("user_u ") == one(store, "p2")
    assert [r.preference_id for r in store.history("user_u")] == ["pref_001"]


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


@pytest.mark.parametrize("pid", ["pref_001", ""])
def test_host_id_faults_raise(pid: str) -> None:
    """Identity 2-4, Invariant 8: a reused or blank host id is a fault, not an outcome."""
    with pytest.raises(InvalidPreferenceId) as info:
        ONE.set("user_v", format="plain", now=T2, preference_id=pid, declared_channels=DECLARED)
    assert info.value.pointer == "/preference_id"
    assert info.value.code in {"preference_id_reused", "blank_preference_id"}


def test_naive_now_raises() -> None:
    """G2: a naive datetime is a caller's mistake, for every write and for in_effect_at."""
    naive = datetime(2026, 3, 1, 9, 0)
    with pytest.raises(NaiveDatetime):
        EMPTY.set("u", format="x", now=naive, preference_id="p", declared_channels=DECLARED)
    with pytest.raises(NaiveDatetime):
        ONE.suspend("pref_001", now=naive)
    with pytest.raises(NaiveDatetime):
        ONE.delete("pref_404", now=naive)
    with pytest.raises(NaiveDatetime):
        ONE.in_effect_at("user_u", naive)


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
