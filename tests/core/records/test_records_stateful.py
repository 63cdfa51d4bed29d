"""Stateful property test of the preference store (rules.md#records, section 8, seed 002).

A `RuleBasedStateMachine` drives random sequences of ``set``, ``suspend``, ``delete``,
``current_for`` and ``read`` (plus ``in_effect_at`` and the host faults) against one
`PreferenceStore`, with a monotonic host clock. Every write is checked against a small
independent model of the expected outcome, every transition against seed 002 Invariants 1, 2,
4, 6, 8 and 9, and every state against Invariants 3, 5, 7, 8, 9 and 10, State 6-8 and 13,
Temporal properties 1-4 and the audit reconstruction of Check 2.1-2.2.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from strategies_records import (
    PRINCIPALS,
    T0,
    clock_steps,
    declared_sets,
    degenerate_sets,
    principals,
    set_requests,
)

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

#: Invariant 2: the only status moves a store may show between two states.
ALLOWED_MOVES = {
    (Status.ACTIVE, Status.ACTIVE),
    (Status.ACTIVE, Status.SUSPENDED),
    (Status.ACTIVE, Status.DELETED),
    (Status.SUSPENDED, Status.SUSPENDED),
    (Status.SUSPENDED, Status.DELETED),
    (Status.DELETED, Status.DELETED),
}
#: Invariant 1.7: the fields a record may ever change after it is recorded (stamps only once).
MUTABLE = ("status", "suspended_at", "deleted_at")


def expected_set_refusal(
    principal: str, request: dict[str, object], declared: list[str]
) -> Refused | None:
    """The model of Operation 4-9: what ``set`` must refuse, in the seed's order."""
    if principal == "":
        return Refused(refusal=Refusal.INVALID_REQUEST, pointer="/principal_ref")
    channels = request.get("channel_preferences") or {}
    assert isinstance(channels, dict)
    fields = ("frequency_limit", "quiet_hours", "format")
    if not channels and all(name not in request for name in fields):
        return Refused(refusal=Refusal.INVALID_REQUEST)
    for key in channels:
        if key not in declared:
            return Refused(
                refusal=Refusal.UNDECLARED_CHANNEL, pointer=f"/channel_preferences/{key}"
            )
    return None


class PreferenceStoreMachine(RuleBasedStateMachine):
    """Random lifecycles of the seed 002 store, checked after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.store = PreferenceStore()
        self.now = T0
        self.counter = 0
        # The independent model: status and principal per id, and which ids were suspended.
        self.status: dict[str, Status] = {}
        self.principal: dict[str, str] = {}
        self.was_suspended: set[str] = set()
        # Check 2.1: (instant, {principal: id in effect}) after every accepted write.
        self.timeline: list[tuple[datetime, dict[str, str]]] = []

    # -- helpers ---------------------------------------------------------------------------

    def advance(self, step: timedelta) -> datetime:
        self.now += step
        return self.now

    def fresh_id(self) -> str:
        self.counter += 1
        return f"pref_{self.counter:03d}"

    def in_effect_model(self) -> dict[str, str]:
        return {
            self.principal[pid]: pid
            for pid, status in self.status.items()
            if status is not Status.DELETED
        }

    def commit(self, new: PreferenceStore, *, accepted: bool) -> None:
        """Check one transition from ``self.store`` to ``new`` and take it."""
        old = self.store
        if not accepted:
            # Operation 30, Invariant 4.3-4.4: a refused write leaves the store as it was.
            assert new is old
            return
        # Invariant 9.2: the record count never falls; 9.1: nothing disappears.
        assert len(new.records) >= len(old.records)
        for pid, before in old.records.items():
            after = new.read(pid)
            assert after is not None, f"{pid} was removed (Invariant 9)"
            # Invariant 1.1-1.7: only status and a first stamp may change.
            assert attrs.evolve(after, **{n: getattr(before, n) for n in MUTABLE}) == before
            if before.suspended_at is not None:
                assert after.suspended_at == before.suspended_at  # Invariant 1.5
            if before.deleted_at is not None:
                assert after.deleted_at == before.deleted_at  # Invariant 1.6
            # Invariant 2.1-2.5: status moves forward only.
            assert (before.status, after.status) in ALLOWED_MOVES
        self.store = new
        self.timeline.append((self.now, self.in_effect_model()))

    # -- writes ----------------------------------------------------------------------------

    @rule(
        principal=principals,
        request=set_requests(),
        declared=declared_sets,
        step=clock_steps,
    )
    def set(
        self, principal: str, request: dict[str, object], declared: list[str], step: timedelta
    ) -> None:
        now, pid = self.advance(step), self.fresh_id()
        assert self.store.read(pid) is None  # the host's ids are fresh (Invariant 8)
        prior = self.store.current_for(principal)
        new, outcome = self.store.set(
            principal,
            now=now,
            preference_id=pid,
            declared_channels=declared,
            **request,  # type: ignore[arg-type]
        )
        refusal = expected_set_refusal(principal, request, declared)
        if refusal is not None:
            assert outcome == refusal
            self.commit(new, accepted=False)
            if prior is not None:  # Invariant 4.3: the prior keeps governing
                assert self.store.current_for(principal) == prior
            return
        assert outcome == Ok(preference_id=pid)  # Operation 3
        self.status[pid] = Status.ACTIVE
        self.principal[pid] = principal
        if prior is not None:
            self.status[prior.preference_id] = Status.DELETED
        self.commit(new, accepted=True)
        record = new.read(pid)
        assert record is not None
        # Operation 1-2, State 2-5, 11, Instance 12.
        assert record.status is Status.ACTIVE
        assert record.principal_ref == principal
        assert record.set_at == now
        assert record.declared_channels == frozenset(declared)
        assert record.suspended_at is None and record.deleted_at is None
        channels = request.get("channel_preferences") or None  # Operation 6-7
        assert record.channel_preferences == _frozen_equal(channels)
        for name in ("frequency_limit", "quiet_hours", "format", "metadata"):
            assert getattr(record, name) == _frozen_equal(request.get(name))
        # Invariant 4.1-4.2, State 12, Temporal property 4: supersession in the same store.
        if prior is not None:
            retired = new.read(prior.preference_id)
            assert retired is not None
            assert retired.status is Status.DELETED
            assert retired.deleted_at == record.set_at == now
            assert retired.suspended_at == prior.suspended_at
        assert new.current_for(principal) == record

    @rule(principal=principals, request=set_requests(), declared=degenerate_sets)
    def set_with_degenerate_channels(
        self, principal: str, request: dict[str, object], declared: list[str]
    ) -> None:
        """Instance 13-16: fail-stop, no outcome, nothing written."""
        with pytest.raises(DegenerateChannelSet) as info:
            self.store.set(
                principal,
                now=self.now,
                preference_id=self.fresh_id(),
                declared_channels=declared,
                **request,  # type: ignore[arg-type]
            )
        assert info.value.code == "degenerate_channel_set"
        assert info.value.pointer is not None
        assert info.value.pointer.startswith("/declared_channels")

    @rule(data=st.data(), principal=principals, request=set_requests())
    def set_reusing_an_id(
        self, data: st.DataObject, principal: str, request: dict[str, object]
    ) -> None:
        """Identity 4, Invariant 8.1: a reused id is a host fault, never a second record."""
        if not self.status:
            return
        pid = data.draw(st.sampled_from(sorted(self.status)))
        with pytest.raises(InvalidPreferenceId):
            self.store.set(
                principal,
                now=self.now,
                preference_id=pid,
                declared_channels=["email"],
                **request,  # type: ignore[arg-type]
            )

    def _target(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from([*sorted(self.status), "pref_999", ""]))

    @rule(data=st.data(), step=clock_steps)
    def suspend(self, data: st.DataObject, step: timedelta) -> None:
        pid, now = self._target(data), self.advance(step)
        before = self.store.read(pid)
        new, outcome = self.store.suspend(pid, now=now)
        if pid not in self.status:
            assert outcome == Refused(refusal=Refusal.NOT_KNOWN)  # Operation 17
            self.commit(new, accepted=False)
        elif self.status[pid] is not Status.ACTIVE:
            assert outcome == Refused(refusal=Refusal.NOT_ACTIVE)  # Operation 18-19
            self.commit(new, accepted=False)
        else:
            assert outcome == Ok(preference_id=pid)
            self.status[pid] = Status.SUSPENDED
            self.was_suspended.add(pid)
            self.commit(new, accepted=True)
            after = new.read(pid)
            # Invariant 6.1-6.3, Operation 20-21, State 9: status and suspended_at alone.
            assert after == attrs.evolve(before, status=Status.SUSPENDED, suspended_at=now)
            self._only_changed(pid)

    @rule(data=st.data(), step=clock_steps)
    def delete(self, data: st.DataObject, step: timedelta) -> None:
        pid, now = self._target(data), self.advance(step)
        before = self.store.read(pid)
        new, outcome = self.store.delete(pid, now=now)
        if pid not in self.status:
            assert outcome == Refused(refusal=Refusal.NOT_KNOWN)  # Operation 24
            self.commit(new, accepted=False)
        elif self.status[pid] is Status.DELETED:
            assert outcome == Refused(refusal=Refusal.ALREADY_DELETED)  # Operation 25
            self.commit(new, accepted=False)
        else:
            assert outcome == Ok(preference_id=pid)
            self.status[pid] = Status.DELETED
            self.commit(new, accepted=True)
            # Operation 26-27, State 10: deleted, stamped, still there.
            assert new.read(pid) == attrs.evolve(before, status=Status.DELETED, deleted_at=now)
            self._only_changed(pid)

    def _only_changed(self, pid: str) -> None:
        """A suspend or delete touches its own record and no other."""
        for other, record in self.store.records.items():
            if other != pid:
                assert record.status is self.status[other]

    # -- reads -----------------------------------------------------------------------------

    @rule(principal=principals)
    def current_for(self, principal: str) -> None:
        """Operation 31-33, 37, Invariant 7: the record in effect, or none; never a write."""
        before = self.store
        answer = self.store.current_for(principal)
        expected = self.in_effect_model().get(principal)
        assert (answer.preference_id if answer else None) == expected
        assert self.store is before

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        """Operation 34-36, Invariant 9.3: any status in full, or not-known."""
        pid = self._target(data)
        answer = self.store.read(pid)
        if pid in self.status:
            assert answer is not None
            assert answer.preference_id == pid
            assert answer.status is self.status[pid]
        else:
            assert answer is None

    @rule(data=st.data(), principal=principals)
    def in_effect_at(self, data: st.DataObject, principal: str) -> None:
        """Check 2.1-2.2 at an instant near a write: exactly on it, just before or after."""
        if not self.timeline:
            return
        at, _ = data.draw(st.sampled_from(self.timeline))
        at += data.draw(st.sampled_from([timedelta(0), -_US, _US]))
        answer = self.store.in_effect_at(principal, at)
        assert (answer.preference_id if answer else None) == self._governing(principal, at)

    def _governing(self, principal: str, at: datetime) -> str | None:
        """The model of Check 2.1: the last accepted write at or before ``at`` decides."""
        current: str | None = None
        for instant, in_effect in self.timeline:
            if instant > at:
                break
            current = in_effect.get(principal)
        return current

    # -- invariants of every state ---------------------------------------------------------

    @invariant()
    def every_state_conforms(self) -> None:
        records = list(self.store.records.values())
        # Invariant 8.1: one record per id; the store's key is the record's id.
        assert [r.preference_id for r in records] == list(self.store.records)
        assert len({r.preference_id for r in records}) == len(records)
        # Invariant 9: the model's ids are all still there.
        assert set(self.store.records) == set(self.status)
        in_effect: dict[str, str] = {}
        for record in records:
            _check_record(record)
            assert record.status is self.status[record.preference_id]
            # State 6-7: suspension instant exactly on records that were suspended.
            assert (record.suspended_at is not None) == (record.preference_id in self.was_suspended)
            if record.in_effect:
                # Invariant 3.1, 4.2: at most one record in effect per principal.
                assert record.principal_ref not in in_effect
                in_effect[record.principal_ref] = record.preference_id
        # Invariant 7.1-7.3: current_for answers exactly the record in effect.
        for principal in PRINCIPALS:
            current = self.store.current_for(principal)
            assert (current.preference_id if current else None) == in_effect.get(principal)
        # Temporal property 4, Check 4.1: successive records of a principal never overlap; the
        # gap is zero for a supersession (checked in `set`), positive after an explicit delete.
        for principal in PRINCIPALS:
            history = self.store.history(principal)
            for prior, successor in itertools.pairwise(history):
                assert prior.deleted_at is not None
                assert prior.deleted_at <= successor.set_at

    @invariant()
    def audit_reconstruction(self) -> None:
        """Check 2.1-2.2 at every write instant and for every principal."""
        for at, _ in self.timeline:
            for principal in PRINCIPALS:
                answer = self.store.in_effect_at(principal, at)
                expected = self._governing(principal, at)
                assert (answer.preference_id if answer else None) == expected
                if answer is not None:
                    # Half-open: in effect from set_at, no longer at deleted_at.
                    assert answer.set_at <= at
                    assert answer.deleted_at is None or at < answer.deleted_at


_US = timedelta(microseconds=1)


def _frozen_equal(value: object) -> object:
    """What a stored opaque value compares equal to: lists are stored as tuples."""
    if isinstance(value, list):
        return tuple(_frozen_equal(v) for v in value)
    if isinstance(value, dict):
        return {k: _frozen_equal(v) for k, v in value.items()}
    return value


def _check_record(record: PreferenceRecord) -> None:
    """The per-record rules an auditor clears from one record alone."""
    # Invariant 10.1-10.2, Check 5.2: a non-degenerate declared channel stamp.
    assert record.declared_channels
    assert "" not in record.declared_channels
    # Invariant 5.1-5.2, Check 5.1: every key is in the record's own stamp.
    assert set(record.channel_preferences or {}) <= record.declared_channels
    # Operation 7: an empty map is never stored.
    assert record.channel_preferences is None or len(record.channel_preferences) > 0
    # Operation 5: at least one preference field.
    fields = (record.channel_preferences, record.frequency_limit, record.quiet_hours)
    assert any(f is not None for f in (*fields, record.format))
    # State 8, 13: deleted exactly when a deletion instant is carried.
    assert (record.status is Status.DELETED) == (record.deleted_at is not None)
    assert record.principal_ref != "" and record.preference_id != ""
    # Temporal properties 1-3 (the clock here is monotonic).
    if record.suspended_at is not None:
        assert record.set_at <= record.suspended_at
    if record.deleted_at is not None:
        assert record.set_at <= record.deleted_at
    if record.suspended_at is not None and record.deleted_at is not None:
        assert record.suspended_at <= record.deleted_at


TestPreferenceStore = PreferenceStoreMachine.TestCase
# max_examples comes from the loaded hypothesis profile (tests/conftest.py).
TestPreferenceStore.settings = settings(
    stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
