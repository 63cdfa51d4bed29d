"""The preference records' contract (section 8, seed 002), on the pure store and on PostgreSQL.

One suite over two twins fed the same requests: `MemoryRecords` holds the core's
`PreferenceStore` value (each write replaces it; a refused write must hand back the very store
and an accepted one leave the old value as it was), `PgRecords` the repository
`notify_pg.stores.records.PreferenceRecordRepository` on a fresh database. Both must answer
the same outcomes, refusals (with their pointers), raised faults, records, ``current_for``,
``read``, ``history`` and ``in_effect_at``. The decision table's lifecycle cases and random
operation sequences run through both as well. What only one twin has stays with it: the value's
own properties and a backward clock's stamps (the pure store stamps the ``now`` it is given,
the repository never one before the principal's latest stamp: `stamp_under_lock`) in
tests/core/records/test_records.py; the schema, storage failures and transactions in
tests/pg/stores/test_pg_records.py.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import attrs
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pgworld import SCHEMA
from strategies_records import (
    T0,
    clock_steps,
    declared_sets,
    degenerate_sets,
    principals,
    set_requests,
)

import notify_core.records.tables as records_tables
from notify_core.records import (
    DegenerateChannelSet,
    InvalidPreferenceId,
    Ok,
    PreferenceRecord,
    PreferenceStore,
    Refusal,
    Refused,
    Status,
)
from notify_core.records.tables import record_to_json, records_lifecycle
from notify_core.values.errors import NaiveDatetime, NotifyError
from notify_pg.stores.records import PreferenceRecordRepository

Conn = psycopg.Connection[Any]
TABLE = Path(__file__).parents[2] / "tables" / "records.jsonl"
CHANNELS = ["email", "sms", "push", "in-app"]
T1 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
T2 = T1 + timedelta(days=21)
T3 = T2 + timedelta(days=10)
T4 = T3 + timedelta(days=14)
T5 = T4 + timedelta(days=30)
ANSWERS = ("set", "suspend", "delete")


class MemoryRecords:
    """The core's store value as a twin: each write replaces the value it holds."""

    name = "memory"

    def __init__(self) -> None:
        self.store = PreferenceStore()

    def _write(self, kind: str, *args: Any, **kwargs: Any) -> Any:
        before = self.store
        records = dict(before.records)
        new, outcome = getattr(before, kind)(*args, **kwargs)
        if outcome.ok:
            assert dict(before.records) == records  # the old value is untouched
        else:
            assert new is before  # a refused write hands back the very store (Operation 30)
        self.store = new
        return outcome

    def set(self, principal_ref: str, **kwargs: Any) -> Any:
        return self._write("set", principal_ref, **kwargs)

    def suspend(self, preference_id: str, *, now: datetime) -> Any:
        return self._write("suspend", preference_id, now=now)

    def delete(self, preference_id: str, *, now: datetime) -> Any:
        return self._write("delete", preference_id, now=now)

    def current_for(self, principal_ref: str) -> PreferenceRecord | None:
        return self.store.current_for(principal_ref)

    def read(self, preference_id: str) -> PreferenceRecord | None:
        return self.store.read(preference_id)

    def history(self, principal_ref: str) -> tuple[PreferenceRecord, ...]:
        return self.store.history(principal_ref)

    def in_effect_at(self, principal_ref: str, instant: datetime) -> PreferenceRecord | None:
        return self.store.in_effect_at(principal_ref, instant)

    def records(self) -> list[PreferenceRecord]:
        return list(self.store.records.values())


class PgRecords:
    """The repository as a twin, on one connection; ``id_prefix`` keeps the records of one
    example of a property test apart from the others' in the same database."""

    name = "postgresql"

    def __init__(self, conn: Conn, id_prefix: str = "") -> None:
        self.conn = conn
        self.repo = PreferenceRecordRepository(SCHEMA)
        self.id_prefix = id_prefix

    def set(self, principal_ref: str, **kwargs: Any) -> Any:
        return self.repo.set(self.conn, principal_ref, **kwargs)

    def suspend(self, preference_id: str, *, now: datetime) -> Any:
        return self.repo.suspend(self.conn, preference_id, now=now)

    def delete(self, preference_id: str, *, now: datetime) -> Any:
        return self.repo.delete(self.conn, preference_id, now=now)

    def current_for(self, principal_ref: str) -> PreferenceRecord | None:
        return self.repo.current_for(self.conn, principal_ref)

    def read(self, preference_id: str) -> PreferenceRecord | None:
        return self.repo.read(self.conn, preference_id)

    def history(self, principal_ref: str) -> tuple[PreferenceRecord, ...]:
        return self.repo.history(self.conn, principal_ref)

    def in_effect_at(self, principal_ref: str, instant: datetime) -> PreferenceRecord | None:
        return self.repo.in_effect_at(self.conn, principal_ref, instant)

    def records(self) -> list[PreferenceRecord]:
        rows = self.conn.execute(
            f"SELECT preference_id FROM {SCHEMA}.preference_records "
            "WHERE starts_with(preference_id, %s) ORDER BY seq",
            [self.id_prefix],
        ).fetchall()
        found = [self.repo.read(self.conn, pid) for (pid,) in rows]
        assert None not in found
        return found  # type: ignore[return-value]


Twin = MemoryRecords | PgRecords


@pytest.fixture(params=["memory", "postgresql"])
def twin(request: pytest.FixtureRequest) -> Iterator[Twin]:
    """The pure store, or the repository on a fresh clone of the template database."""
    if request.param == "memory":
        yield MemoryRecords()
    else:
        yield PgRecords(request.getfixturevalue("conn"))


def put(twin: Twin, principal: str, pid: str, now: datetime, **fields: Any) -> None:
    """Set and insist it was accepted."""
    outcome = twin.set(principal, now=now, preference_id=pid, declared_channels=CHANNELS, **fields)
    assert outcome == Ok(preference_id=pid)


def one(twin: Twin, pid: str) -> PreferenceRecord:
    record = twin.read(pid)
    assert record is not None
    return record


def with_one(twin: Twin) -> Twin:
    """pref_001 of user_u, active since T1."""
    put(twin, "user_u", "pref_001", T1, channel_preferences={"email": "digest"})
    return twin


# -- the case table, row by row --------------------------------------------------------------


def test_set_without_prior_records_one_active_record(twin: Twin) -> None:
    """Section 8, Set with no prior: the new id, one record in Active (Operation 1-3, State
    2, 11)."""
    outcome = twin.set(
        "user_u",
        channel_preferences={"email": "digest"},
        metadata={"form": 3},
        now=T1,
        preference_id="pref_001",
        declared_channels=CHANNELS,
    )
    assert outcome == Ok(preference_id="pref_001") and outcome.ok is True
    assert twin.records() == [
        PreferenceRecord(
            preference_id="pref_001",
            principal_ref="user_u",
            declared_channels=CHANNELS,
            set_at=T1,
            status=Status.ACTIVE,
            channel_preferences={"email": "digest"},
            metadata={"form": 3},
        )
    ]


def test_set_with_prior_supersedes_in_one_transition(twin: Twin) -> None:
    """Section 8, Set with a prior in effect: new Active, prior Deleted at the same now
    (Operation 14-15, State 12, Invariant 4.1)."""
    with_one(twin)
    put(twin, "user_u", "pref_088", T2, format="plain")
    prior, new = one(twin, "pref_001"), one(twin, "pref_088")
    assert prior.status is Status.DELETED and prior.deleted_at == T2
    assert new.status is Status.ACTIVE and new.set_at == T2
    assert twin.current_for("user_u") == new


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
def test_set_invalid_request(
    twin: Twin, principal: str, fields: dict[str, Any], pointer: str | None
) -> None:
    """Section 8, invalid-request: a blank principal, no preference field, or an empty map as
    the only one; nothing written (Operation 4-6, 9, 30; Invariant 4.3-4.4)."""
    with_one(twin)
    before = twin.records()
    outcome = twin.set(
        principal, now=T2, preference_id="pref_002", declared_channels=CHANNELS, **fields
    )
    assert outcome == Refused(refusal=Refusal.INVALID_REQUEST, pointer=pointer)
    assert outcome.ok is False
    assert twin.records() == before


def test_set_undeclared_channel(twin: Twin) -> None:
    """Section 8, undeclared-channel: the first key outside the injected set, escaped in the
    pointer; nothing written, the prior still in effect (Operation 8, Invariant 4.3)."""
    with_one(twin)
    outcome = twin.set(
        "user_u",
        channel_preferences={"email": "preferred", "carrier-pigeon": "backup", "fax": "x"},
        now=T2,
        preference_id="pref_002",
        declared_channels=CHANNELS,
    )
    assert outcome == Refused(
        refusal=Refusal.UNDECLARED_CHANNEL, pointer="/channel_preferences/carrier-pigeon"
    )
    assert twin.current_for("user_u") == one(twin, "pref_001")
    assert twin.read("pref_002") is None
    escaped = twin.set(
        "u", channel_preferences={"a/b~c": 1}, now=T1, preference_id="p", declared_channels=["e"]
    )
    assert escaped == Refused(
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
def test_set_degenerate_channel_set_fails_stop(
    twin: Twin, declared: list[str], pointer: str
) -> None:
    """Section 8, the fail-stop: a degenerate injected set raises, even for a request that
    would be refused, and nothing is written (Instance 11, 13-16)."""
    with_one(twin)
    for principal, channels in [("user_u", {"format": "plain"}), ("", {}), ("u", {"x": 1})]:
        with pytest.raises(DegenerateChannelSet) as info:
            twin.set(
                principal,
                now=T2,
                preference_id="pref_002",
                declared_channels=declared,
                channel_preferences=channels,
            )
        assert info.value.as_json() == {"code": "degenerate_channel_set", "pointer": pointer}
    assert [r.preference_id for r in twin.records()] == ["pref_001"]


def test_suspend_active_keeps_the_values(twin: Twin) -> None:
    """Section 8, suspend on Active: ok, Suspended, the instant stamped, values kept
    (Operation 20-22, State 9, Invariant 6)."""
    with_one(twin)
    before = one(twin, "pref_001")
    assert twin.suspend("pref_001", now=T2) == Ok(preference_id="pref_001")
    record = one(twin, "pref_001")
    assert record == attrs.evolve(before, status=Status.SUSPENDED, suspended_at=T2)
    assert twin.current_for("user_u") == record  # a suspended record is in effect (Op. 37)


@pytest.mark.parametrize("first", ["suspend", "delete"])
def test_suspend_not_active(twin: Twin, first: str) -> None:
    """Section 8, not-active: suspend on Suspended or Deleted changes nothing (Operation
    18-19)."""
    with_one(twin)
    getattr(twin, first)("pref_001", now=T2)
    before = twin.records()
    assert twin.suspend("pref_001", now=T3) == Refused(refusal=Refusal.NOT_ACTIVE)
    assert twin.records() == before


@pytest.mark.parametrize("suspended", [False, True])
def test_delete_active_or_suspended(twin: Twin, suspended: bool) -> None:
    """Section 8, delete on Active or Suspended: ok, Deleted, stamped, the record kept
    (Operation 26-27, State 6, 10, Invariant 2.2, 9)."""
    with_one(twin)
    if suspended:
        twin.suspend("pref_001", now=T2)
    assert twin.delete("pref_001", now=T3) == Ok(preference_id="pref_001")
    record = one(twin, "pref_001")
    assert (record.status, record.deleted_at) == (Status.DELETED, T3)
    assert record.suspended_at == (T2 if suspended else None)
    assert twin.current_for("user_u") is None


def test_delete_deleted(twin: Twin) -> None:
    """Section 8, already-deleted: nothing changes, the first stamp stays (Operation 25,
    Invariant 1.6)."""
    with_one(twin)
    twin.delete("pref_001", now=T2)
    assert twin.delete("pref_001", now=T3) == Refused(refusal=Refusal.ALREADY_DELETED)
    assert one(twin, "pref_001").deleted_at == T2


@pytest.mark.parametrize("pid", ["pref_404", "", "PREF_001", "pref_001 ", "a\x00b"])
def test_writes_and_reads_of_an_unknown_id(twin: Twin, pid: str) -> None:
    """Section 8, not-known: either write on an id naming nothing, blank included; a read
    answers None (Operation 17, 24, 36)."""
    with_one(twin)
    assert twin.suspend(pid, now=T2) == Refused(refusal=Refusal.NOT_KNOWN)
    assert twin.delete(pid, now=T2) == Refused(refusal=Refusal.NOT_KNOWN)
    assert twin.read(pid) is None


@pytest.mark.parametrize("principal", ["", "user_v", "User_U", "user_u ", " user_u", "u\x00"])
def test_current_for_none_exact_match_only(twin: Twin, principal: str) -> None:
    """Section 8, current_for with nothing in effect, blank included: None; principals match
    exactly (Operation 32-33, Identity 9-10)."""
    with_one(twin)
    assert twin.current_for(principal) is None
    assert twin.history(principal) == ()


def test_read_any_state(twin: Twin) -> None:
    """Section 8, read: the whole record in any state, Deleted included (Operation 34-35,
    Invariant 9.3)."""
    with_one(twin)
    twin.delete("pref_001", now=T2)
    assert one(twin, "pref_001").status is Status.DELETED


# -- the worked examples -------------------------------------------------------------------


def test_seed_lifecycle_onboarding_vacation_resumption_closure(twin: Twin) -> None:
    """Seed 002 Examples: pref_001 -> pref_088 -> pref_141 for user_u, all kept (Invariant 9):
    onboarding, an update that supersedes, a vacation suspend, the resumption as a fresh set
    replaying the suspended values (Invariant 6), account closure and its rejection paths."""
    first = {"email": "digest", "push": "real-time", "sms": "opt-out"}
    put(twin, "user_u", "pref_001", T1, channel_preferences=first, format="plain")
    assert twin.current_for("user_u") == one(twin, "pref_001")
    second = {"email": "digest", "push": "real-time", "sms": "urgent-only"}
    update: dict[str, Any] = dict(
        channel_preferences=second, frequency_limit={"per_day": 10}, format="plain"
    )
    put(twin, "user_u", "pref_088", T2, **update)
    prior = one(twin, "pref_001")
    assert prior.status is Status.DELETED and prior.deleted_at == T2
    current = twin.current_for("user_u")
    assert current is not None and current.preference_id == "pref_088"
    assert current.frequency_limit == {"per_day": 10}
    assert current.quiet_hours is None  # State 4: omitted stays absent
    assert twin.suspend("pref_088", now=T3) == Ok(preference_id="pref_088")
    paused = twin.current_for("user_u")
    assert paused is not None and paused.status is Status.SUSPENDED
    assert paused.channel_preferences == second
    assert twin.suspend("pref_001", now=T3) == Refused(refusal=Refusal.NOT_ACTIVE)
    put(twin, "user_u", "pref_141", T4, **update)
    old = one(twin, "pref_088")
    assert (old.status, old.set_at, old.suspended_at, old.deleted_at) == (
        Status.DELETED,
        T2,
        T3,
        T4,
    )
    new = one(twin, "pref_141")
    assert new.channel_preferences == second and new.suspended_at is None  # State 7
    assert twin.delete("pref_141", now=T5) == Ok(preference_id="pref_141")
    assert twin.delete("pref_141", now=T5) == Refused(refusal=Refusal.ALREADY_DELETED)
    assert twin.current_for("user_u") is None
    history = twin.history("user_u")
    assert [r.preference_id for r in history] == ["pref_001", "pref_088", "pref_141"]
    assert all(r.status is Status.DELETED for r in history)


def test_rejection_path_set_carrying_nothing_issues_no_id(twin: Twin) -> None:
    """Seed 002: set(principal_ref: user_u) -> invalid-request; nothing stored, and the id was
    not consumed: the host may hand it out again (Operation 5)."""
    outcome = twin.set("user_u", now=T1, preference_id="pref_001", declared_channels=CHANNELS)
    assert outcome == Refused(refusal=Refusal.INVALID_REQUEST)
    assert twin.records() == []
    put(twin, "user_u", "pref_001", T1, format="plain")


def test_regulator_audit_half_open_intervals(twin: Twin) -> None:
    """Seed 002 CAN-SPAM audit: pref_201 governs [2025-08-01, 2026-03-14), pref_244 from then
    on (Check 2.1-2.2: at the supersession instant the successor governs), at any offset."""
    t201, t244 = datetime(2025, 8, 1, tzinfo=UTC), datetime(2026, 3, 14, tzinfo=UTC)
    put(twin, "user_v", "pref_201", t201, channel_preferences={"email": "preferred"})
    put(twin, "user_v", "pref_244", t244, channel_preferences={"email": "opt-out"})
    us = timedelta(microseconds=1)

    def governing(at: datetime) -> str | None:
        record = twin.in_effect_at("user_v", at)
        return None if record is None else record.preference_id

    assert governing(t201 - us) is None
    assert governing(t201) == "pref_201"
    assert governing(t244 - us) == "pref_201"
    assert governing(t244) == "pref_244"
    assert governing(datetime(2027, 1, 1, tzinfo=UTC)) == "pref_244"
    assert governing(t244.astimezone(timezone(timedelta(hours=1)))) == "pref_244"
    assert twin.in_effect_at("user_u", t244) is None


def test_disputed_delivery_reconstruction(twin: Twin) -> None:
    """Seed 002 TCPA: the record in effect at an instant, its quiet hours, and its status then;
    a suspended record is still the one in effect (`in_effect_at` answers it)."""
    quiet = {"start": "22:00", "end": "07:00", "timezone": "America/Los_Angeles"}
    put(twin, "user_w", "pref_300", T1, quiet_hours=quiet)
    twin.suspend("pref_300", now=T3)
    twin.delete("pref_300", now=T5)
    at = T2 + timedelta(hours=14, minutes=30)
    record = twin.in_effect_at("user_w", at)
    assert record is not None and record.quiet_hours == quiet
    assert record.status_at(at) is Status.ACTIVE and record.status_at(T3) is Status.SUSPENDED
    assert record.status_at(T5) is Status.DELETED
    assert record.status_at(T1 - timedelta(seconds=1)) is None
    assert twin.in_effect_at("user_w", T4) == record
    assert twin.in_effect_at("user_w", T5) is None


# -- values, stamps and faults ----------------------------------------------------------------


def test_channel_set_evolution_is_visible_only_forward(twin: Twin) -> None:
    """Each record keeps the set it was validated against (Invariant 5.3, 10); a replay of a
    withdrawn channel is refused (Resumption 3-4)."""
    put(twin, "u", "p1", T1, channel_preferences={"sms": "urgent"})
    later = ["email", "push"]
    outcome = twin.set(
        "u", channel_preferences={"sms": "urgent"}, now=T2, preference_id="p2",
        declared_channels=later,
    )  # fmt: skip
    assert outcome == Refused(
        refusal=Refusal.UNDECLARED_CHANNEL, pointer="/channel_preferences/sms"
    )
    assert twin.set("u", format="rich", now=T2, preference_id="p2", declared_channels=later).ok
    assert one(twin, "p1").declared_channels == frozenset(CHANNELS)
    assert one(twin, "p2").declared_channels == {"email", "push"}


def test_a_generator_of_channel_names_is_read_once(twin: Twin) -> None:
    outcome = twin.set(
        "u", now=T1, preference_id="p1", declared_channels=(c for c in CHANNELS),
        channel_preferences={"push": "all"},
    )  # fmt: skip
    assert outcome == Ok(preference_id="p1")
    assert one(twin, "p1").declared_channels == frozenset(CHANNELS)


def test_empty_channel_map_is_stored_absent(twin: Twin) -> None:
    """Operation 6-7, State 4: an empty map beside another field is stored as absent."""
    put(twin, "u", "p1", T1, channel_preferences={}, format="plain")
    assert one(twin, "p1").channel_preferences is None


def test_opaque_values_come_back_as_supplied(twin: Twin) -> None:
    """Operation 10-11: stored as given, member order, number types, escapes and "" / {}
    included; a caller's copy changed afterwards changes nothing (Invariant 1.2-1.3)."""
    limit: dict[str, Any] = {"per_day": 10, "days": ["mon", "tue"]}
    channels = {"sms": "urgent-only", "email": {"mode": "digest"}}
    metadata = {"z": 1e16, "a": [0.1, -0.0, 5e-324, 10**30], "nul": "a\x00b", "ü": "✓"}
    put(
        twin, "u", "p1", T1, frequency_limit=limit, channel_preferences=channels, format="",
        quiet_hours={}, metadata=metadata,
    )  # fmt: skip
    limit["per_day"] = 99
    channels["email"]["mode"] = "off"  # type: ignore[index]
    record = one(twin, "p1")
    assert record.frequency_limit == {"per_day": 10, "days": ("mon", "tue")}
    assert list(record.channel_preferences or {}) == ["sms", "email"]
    assert record.channel_preferences == {"sms": "urgent-only", "email": {"mode": "digest"}}
    assert (record.format, record.quiet_hours) == ("", {})
    assert json.dumps(record_to_json(record)["metadata"]) == json.dumps(metadata)


def test_principals_match_exactly(twin: Twin) -> None:
    """Identity 8-11: no case folding, no trimming; each is its own principal."""
    for i, principal in enumerate(["user_u", "User_U", "user_u ", "usér_u"]):
        put(twin, principal, f"p{i}", T1, format="plain")
    assert [r.status for r in twin.records()] == [Status.ACTIVE] * 4
    current = twin.current_for("User_U")
    assert current is not None and current.preference_id == "p1"
    assert [r.preference_id for r in twin.history("user_u")] == ["p0"]


@pytest.mark.parametrize("pid", ["pref_001", ""])
def test_host_id_faults_raise(twin: Twin, pid: str) -> None:
    """Identity 2-4, Invariant 8.1: a reused id (of any principal) or a blank one is a fault,
    not an outcome; nothing is written."""
    with_one(twin)
    with pytest.raises(InvalidPreferenceId) as info:
        twin.set("user_v", now=T2, preference_id=pid, declared_channels=CHANNELS, format="x")
    code = "preference_id_reused" if pid else "blank_preference_id"
    assert info.value.as_json() == {"code": code, "pointer": "/preference_id"}
    assert twin.history("user_v") == ()


def test_naive_now_raises(twin: Twin) -> None:
    """G2: a naive datetime is a caller's mistake, for every write and for in_effect_at."""
    with_one(twin)
    naive = datetime(2026, 3, 1)
    for call in (
        lambda: twin.set("u", now=naive, preference_id="p", declared_channels=CHANNELS,
                         format="x"),
        lambda: twin.suspend("pref_001", now=naive),
        lambda: twin.delete("pref_001", now=naive),
        lambda: twin.delete("pref_404", now=naive),
        lambda: twin.in_effect_at("user_u", naive),
    ):  # fmt: skip
        with pytest.raises(NaiveDatetime):
            call()
    assert one(twin, "pref_001").status is Status.ACTIVE


# -- the decision table and random sequences, through both ------------------------------------


class PgValue:
    """The repository dressed as a `PreferenceStore` value, so that the core's table runner
    and the side-by-side comparison drive it unchanged: a write answers ``(self, outcome)``."""

    def __init__(self, twin: PgRecords) -> None:
        self.twin = twin

    def set(self, principal_ref: str, **kwargs: Any) -> tuple[PgValue, Any]:
        return self, self.twin.set(principal_ref, **kwargs)

    def suspend(self, preference_id: str, *, now: datetime) -> tuple[PgValue, Any]:
        return self, self.twin.suspend(preference_id, now=now)

    def delete(self, preference_id: str, *, now: datetime) -> tuple[PgValue, Any]:
        return self, self.twin.delete(preference_id, now=now)

    def current_for(self, principal_ref: str) -> PreferenceRecord | None:
        return self.twin.current_for(principal_ref)

    def read(self, preference_id: str) -> PreferenceRecord | None:
        return self.twin.read(preference_id)

    def in_effect_at(self, principal_ref: str, instant: datetime) -> PreferenceRecord | None:
        return self.twin.in_effect_at(principal_ref, instant)

    @property
    def records(self) -> dict[str, PreferenceRecord]:
        return {r.preference_id: r for r in self.twin.records()}


def lifecycle_cases() -> list[dict[str, Any]]:
    cases = []
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            case = json.loads(line)
            if case["function"] == "records_lifecycle":
                cases.append(case)
    return cases


LIFECYCLES = lifecycle_cases()


@pytest.mark.parametrize("case", LIFECYCLES, ids=[c["id"] for c in LIFECYCLES])
def test_table_case(twin: Twin, case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every records_lifecycle case of the decision table (formats.md section 1): the same
    answers, records, refusals and errors (pointers included) on both twins."""
    if isinstance(twin, PgRecords):
        monkeypatch.setattr(records_tables, "PreferenceStore", lambda: PgValue(twin))
    try:
        got: dict[str, object] = records_lifecycle(case["input"])
    except NotifyError as err:
        got = {"error": err.as_json()}
    assert got == case["expect"]


OPS = st.one_of(
    st.tuples(st.just("set"), principals, set_requests(), declared_sets, clock_steps),
    st.tuples(st.just("set_degenerate"), principals, set_requests(), degenerate_sets),
    st.tuples(st.just("set_reused"), principals, set_requests()),
    st.tuples(st.sampled_from(["suspend", "delete"]), st.integers(-1, 12), clock_steps),
    st.tuples(st.just("current_for"), principals),
    st.tuples(st.just("read"), st.integers(-1, 12)),
    st.tuples(st.just("in_effect_at"), principals, st.timedeltas(timedelta(0), timedelta(days=9))),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OPS, min_size=1, max_size=25))
def test_random_sequences_answer_alike_on_both_twins(
    conn: Conn, ops: list[tuple[Any, ...]]
) -> None:
    """Section 8: the same operation sequences through the pure store and the repository give
    equal outcomes, equal raised errors, equal reads and equal records at the end (the
    stateful property test of the ten invariants runs on the pure store:
    tests/core/records/test_records_stateful.py)."""
    token = uuid.uuid4().hex[:8]  # one database for all examples: ids and principals apart

    def principal(p: str) -> str:
        return p if p == "" else f"{token}:{p}"

    def pid(i: int) -> str:
        return "" if i < 0 else f"{token}-p{i}"

    core = PreferenceStore()
    pg = PgValue(PgRecords(conn, f"{token}-"))
    now = T0
    made = 0

    def both(call: Callable[[Any], Any]) -> None:
        nonlocal core
        try:
            expected: Any = call(core)
        except NotifyError as err:
            with pytest.raises(type(err)) as info:
                call(pg)
            assert info.value.as_json() == err.as_json()
            return
        got = call(pg)
        if isinstance(expected, tuple):
            core, expected = expected
            got = got[1]
        assert got == expected

    for op in ops:
        kind = op[0]
        if kind in ("set", "set_degenerate", "set_reused"):
            if kind == "set":
                now += op[4]
            new_id = pid(max(made - 1, 0)) if kind == "set_reused" and made else pid(made)
            declared = op[3] if kind != "set_reused" else CHANNELS
            args = dict(op[2], now=now, preference_id=new_id, declared_channels=declared)
            who = principal(op[1])
            before = len(core.records)
            both(lambda s, p=who, a=args: s.set(p, **a))
            made += len(core.records) - before
        elif kind in ("suspend", "delete"):
            now += op[2]
            target = pid(op[1])
            both(lambda s, k=kind, i=target, t=now: getattr(s, k)(i, now=t))
        elif kind == "current_for":
            who = principal(op[1])
            both(lambda s, p=who: s.current_for(p))
        elif kind == "read":
            target = pid(op[1])
            both(lambda s, i=target: s.read(i))
        else:
            who = principal(op[1])
            both(lambda s, p=who, t=T0 + op[2]: s.in_effect_at(p, t))
    assert list(pg.records.values()) == list(core.records.values())
    assert [record_to_json(r) for r in pg.records.values()] == [
        record_to_json(r) for r in core.records.values()
    ]
