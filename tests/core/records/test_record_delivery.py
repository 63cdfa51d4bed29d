"""Preference records composed into delivery, in the core (M1-M5; section 8).

The record in effect (M1) as the fact `RecordInEffect`, what notify reads from a channel
value, the verdict of M2-M4 on one more delivery, the local day of the cap, the last step of
`decide` that takes push routes away, and the audit's reading of one delivery.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.hints.decide import (
    Device,
    EventFacts,
    FlushState,
    RecipientFacts,
    Route,
    Send,
    Skip,
    SkipReason,
    Via,
    decide,
    decide_all,
    explain,
    flush,
    release_delayed,
)
from notify_core.hints.decision_values import new_recipient_facts
from notify_core.hints.levels import LevelFacts
from notify_core.records import (
    ChannelRule,
    DayCount,
    DeliveryChannel,
    PreferenceRecord,
    PreferenceStore,
    RecordInEffect,
    RecordReason,
    Status,
    audit_delivery,
    channel_rule,
    governing_record,
    local_day,
    next_local_midnight,
    rules_in_effect,
    verdict,
)
from notify_core.values.errors import NaiveDatetime, UsageError
from tests import strategies as hs

T = datetime(2026, 3, 2, 9, tzinfo=UTC)
PUSH, EMAIL = DeliveryChannel.PUSH, DeliveryChannel.EMAIL
ALL = LevelFacts(instance_default="all")
ZONES = ("Europe/Berlin", "America/Santiago", "Asia/Beirut", "Pacific/Apia", "UTC", None)


def record(**kw: object) -> RecordInEffect:
    return RecordInEffect(preference_id="p1", **kw)  # type: ignore[arg-type]


class TestChannelValues:
    """What notify reads from the values of ``push`` and ``email`` (M3-M5, the audit)."""

    def test_m3_enabled_false_turns_the_channel_off(self) -> None:
        assert channel_rule({"enabled": False}, "push") == (ChannelRule(enabled=False), ())

    def test_m4_max_per_day_is_read(self) -> None:
        assert channel_rule({"max_per_day": 3}, "email") == (ChannelRule(max_per_day=3), ())

    def test_m5_format_plain(self) -> None:
        assert channel_rule({"format": "plain"}, "email") == (ChannelRule(plain=True), ())
        assert channel_rule({"format": "rich"}, "email") == (ChannelRule(), ())

    def test_audit_unreadable_values_are_not_applied_and_named(self) -> None:
        assert channel_rule("digest", "email") == (ChannelRule(), ("/email",))
        rule, bad = channel_rule(
            {"enabled": "no", "max_per_day": 0, "format": "html", "sound": True}, "push"
        )
        assert rule == ChannelRule()
        assert bad == ("/push/enabled", "/push/max_per_day", "/push/format")

    def test_audit_a_bad_member_does_not_undo_a_readable_one(self) -> None:
        rule, bad = channel_rule({"enabled": False, "max_per_day": 1.5}, "push")
        assert rule == ChannelRule(enabled=False)
        assert bad == ("/push/max_per_day",)

    def test_members_notify_does_not_read_change_nothing(self) -> None:
        assert channel_rule({"sound": "ping"}, "push") == (ChannelRule(), ())
        assert channel_rule(None, "push") == (ChannelRule(), ())

    def test_bool_is_not_a_cap(self) -> None:
        assert channel_rule({"max_per_day": True}, "push")[1] == ("/push/max_per_day",)


class TestVerdict:
    def test_m1_no_record_shapes_nothing(self) -> None:
        assert verdict(None, PUSH, 10**6) is None

    def test_m2_suspended_pauses_both_channels_first(self) -> None:
        r = record(suspended=True, push=ChannelRule(enabled=False))
        assert verdict(r, PUSH) is RecordReason.SUSPENDED
        assert verdict(r, EMAIL) is RecordReason.SUSPENDED

    def test_m3_channel_off_only_that_channel(self) -> None:
        r = record(email=ChannelRule(enabled=False, max_per_day=1))
        assert verdict(r, EMAIL, 5) is RecordReason.RECORD_CHANNEL_OFF
        assert verdict(r, PUSH, 5) is None

    @given(st.integers(1, 20), st.integers(0, 40))
    def test_m4_the_cap_lets_exactly_n_through(self, cap: int, sent: int) -> None:
        r = record(push=ChannelRule(max_per_day=cap))
        expected = RecordReason.FREQUENCY_CAP if sent >= cap else None
        assert verdict(r, PUSH, sent) is expected
        assert r.caps_push and not r.caps_email


class TestLocalDay:
    @given(hs.moments, st.sampled_from(ZONES))
    def test_m4_next_local_midnight_starts_the_next_local_day(
        self, t: datetime, zone: str | None
    ) -> None:
        midnight = next_local_midnight(t, zone)
        assert midnight > t
        assert local_day(midnight, zone) == local_day(t, zone) + timedelta(days=1)
        assert local_day(midnight - timedelta(microseconds=1), zone) == local_day(t, zone)

    def test_m4_the_day_is_the_persons_zone_else_utc(self) -> None:
        late = datetime(2026, 3, 1, 23, 30, tzinfo=UTC)
        assert local_day(late, "Europe/Berlin") == date(2026, 3, 2)
        assert local_day(late, None) == date(2026, 3, 1)
        assert local_day(late, "Not/AZone") == date(2026, 3, 1)

    def test_naive_instant_refused(self) -> None:
        with pytest.raises(NaiveDatetime):
            next_local_midnight(datetime(2026, 3, 1), "UTC")

    def test_day_count(self) -> None:
        d1, d2 = date(2026, 3, 1), date(2026, 3, 2)
        c = DayCount().plus_one(d1).plus_one(d1)
        assert (c.on(d1), c.on(d2)) == (2, 0)
        assert c.plus_one(d2) == DayCount(d2, 1)
        with pytest.raises(UsageError):
            c.plus_one(date(2026, 2, 28))


def _facts(rec: RecordInEffect | None, pushes: int = 0, **kw: object) -> RecipientFacts:
    devices = [Device(id="d-1", platform="android"), Device(id="d-2", platform="desktop")]
    return RecipientFacts(
        allowed=True, level=ALL, devices=devices, record=rec, pushes_today=pushes, **kw
    )


EVENT = EventFacts(now=T, kind="mention", thread="t-1")


class TestDecideShaping:
    """The last step of decide, flush and release: M2-M4 take push routes away."""

    def test_m2_suspended_person_gets_no_push(self) -> None:
        assert decide(EVENT, _facts(record(suspended=True))) == Skip(reason=SkipReason.SUSPENDED)

    def test_m2_a_live_gateway_route_still_goes(self) -> None:
        from notify_core.hints.decide import Connection

        person = _facts(record(suspended=True), connections=[Connection(device="d-2")])
        decision = decide(EVENT, person)
        assert isinstance(decision, Send)
        assert decision.routes == (Route(device="d-2", via=Via.GATEWAY),)

    def test_m3_channel_off(self) -> None:
        person = _facts(record(push=ChannelRule(enabled=False)))
        assert decide(EVENT, person) == Skip(reason=SkipReason.RECORD_CHANNEL_OFF)

    def test_m3_email_off_leaves_push(self) -> None:
        person = _facts(record(email=ChannelRule(enabled=False)))
        assert decide(EVENT, person) == attrs.evolve(decide(EVENT, _facts(None)), record="p1")

    def test_m4_cap_reached_then_not(self) -> None:
        capped = record(push=ChannelRule(max_per_day=2))
        assert decide(EVENT, _facts(capped, 2)) == Skip(reason=SkipReason.FREQUENCY_CAP)
        allowed = decide(EVENT, _facts(capped, 1))
        assert allowed == attrs.evolve(decide(EVENT, _facts(None)), record="p1")

    def test_m6_a_send_with_a_push_route_names_its_record(self) -> None:
        from notify_core.hints.decide import Connection

        sent = decide(EVENT, _facts(record()))
        assert isinstance(sent, Send) and sent.record == "p1"
        assert isinstance(decide(EVENT, _facts(None)), Send)
        gateway = _facts(record(), connections=[Connection(device="d-1"), Connection(device="d-2")])
        only_gateway = decide(EVENT, gateway)
        assert isinstance(only_gateway, Send) and only_gateway.record is None

    def test_m2_flush_and_release_check_again(self) -> None:
        paused = _facts(record(suspended=True))
        state = FlushState(collected=2, unread=2)
        assert flush(state, EVENT, paused) == Skip(reason=SkipReason.SUSPENDED)
        assert release_delayed(EVENT, paused, "d-1", False) == Skip(reason=SkipReason.SUSPENDED)
        assert isinstance(release_delayed(EVENT, _facts(record()), "d-1", False), Send)

    def test_m2_the_fast_paths_agree(self) -> None:
        event = EventFacts(now=T, kind="message", thread="t-1")
        paused = record(suspended=True)
        fast = new_recipient_facts(
            True, False, ALL, None, (), _facts(None).switches, _facts(None).devices, (), None,
            paused, 0,
        )  # fmt: skip
        assert fast == _facts(paused)
        assert decide_all(event, [fast]) == [Skip(reason=SkipReason.SUSPENDED)]

    def test_m2_explain_names_the_record_step(self) -> None:
        steps = explain(EVENT, _facts(record(push=ChannelRule(max_per_day=1)), 1)).steps
        assert steps[-1].rule == "M2-M4"
        assert steps[-1].ended
        assert steps[-1].read == {
            "record": "p1",
            "suspended": False,
            "push_enabled": True,
            "max_per_day": 1,
            "pushes_today": 1,
        }

    @given(hs.events(), hs.recipients(), st.sampled_from(list(RecordReason)))
    def test_m2_held_back_means_no_push_route_ever(
        self, event: EventFacts, person: RecipientFacts, reason: RecordReason
    ) -> None:
        rec = {
            RecordReason.SUSPENDED: record(suspended=True),
            RecordReason.RECORD_CHANNEL_OFF: record(push=ChannelRule(enabled=False)),
            RecordReason.FREQUENCY_CAP: record(push=ChannelRule(max_per_day=1)),
        }[reason]
        shaped = attrs.evolve(person, record=rec, pushes_today=1)
        before = decide(event, person)
        after = decide(event, shaped)
        assert decide_all(event, [shaped]) == [after]
        if isinstance(before, Send):
            gateways = tuple(r for r in before.routes if r.via is Via.GATEWAY)
            if gateways == before.routes:
                assert after == before  # no push route: not a push delivery
            elif gateways:
                assert isinstance(after, Send)
                assert after.routes == gateways
            else:
                assert after == Skip(reason=SkipReason(reason.value))
        else:
            assert after == before


def _stored(**kw: object) -> PreferenceRecord:
    base: dict[str, object] = {
        "preference_id": "p1",
        "principal_ref": "u",
        "status": "active",
        "declared_channels": ["push", "email"],
        "set_at": T,
    }
    return PreferenceRecord(**{**base, **kw})  # type: ignore[arg-type]


class TestGoverningRecord:
    def test_m1_the_record_in_effect_at_the_instant(self) -> None:
        store, _ = PreferenceStore().set(
            "u",
            now=T,
            preference_id="p1",
            declared_channels=["push", "email"],
            channel_preferences={"push": {"max_per_day": 5}, "email": "weekly"},
        )
        store, _ = store.suspend("p1", now=T + timedelta(hours=1))
        store, _ = store.set(
            "u", now=T + timedelta(hours=2), preference_id="p2",
            declared_channels=["push", "email"], channel_preferences={"push": {"enabled": True}},
        )  # fmt: skip
        assert governing_record(store, "u", T - timedelta(seconds=1)) is None
        first = governing_record(store, "u", T)
        assert first == RecordInEffect(
            preference_id="p1", push=ChannelRule(max_per_day=5), not_applied=("/email",)
        )
        paused = governing_record(store, "u", T + timedelta(hours=1))
        assert paused is not None and paused.suspended
        resumed = governing_record(store, "u", T + timedelta(hours=2))
        assert resumed == RecordInEffect(preference_id="p2")
        assert governing_record(store, "v", T) is None

    def test_m1_a_deleted_record_governs_nothing_after(self) -> None:
        r = _stored(status="deleted", deleted_at=T + timedelta(hours=1))
        assert rules_in_effect(r, T) is not None
        assert rules_in_effect(r, T + timedelta(hours=1)) is None


class TestAudit:
    def test_audit_audit_reads_decision_and_send(self) -> None:
        r = _stored(
            status="suspended",
            suspended_at=T + timedelta(minutes=5),
            channel_preferences={"push": {"max_per_day": 1}},
        )
        audit = audit_delivery([r], channel="push", decided_at=T, sent_at=T + timedelta(minutes=10))
        assert audit.at_decision is not None and audit.at_decision.allowed
        assert audit.at_decision.status is Status.ACTIVE
        assert audit.at_send is not None
        assert audit.at_send.status is Status.SUSPENDED
        assert audit.at_send.reason is RecordReason.SUSPENDED
        assert not audit.allowed

    def test_audit_cap_counts_what_went_before(self) -> None:
        r = _stored(channel_preferences={"email": {"max_per_day": 2, "format": "pdf"}})
        ok = audit_delivery([r], channel="email", decided_at=T, sent_at=T, delivered_before_send=1)
        over = audit_delivery(
            [r], channel="email", decided_at=T, sent_at=T, delivered_before_send=2
        )
        assert ok.allowed and not over.allowed
        assert over.at_send is not None and over.at_send.not_applied == ("/email/format",)

    def test_audit_no_record_allows(self) -> None:
        audit = audit_delivery([], channel="push", decided_at=T, sent_at=T)
        assert audit.allowed and audit.at_send is None and audit.at_decision is None

    def test_bad_arguments(self) -> None:
        with pytest.raises(UsageError) as e:
            audit_delivery([], channel="sms", decided_at=T, sent_at=T)
        assert e.value.code == "unknown_channel"
        with pytest.raises(UsageError):
            audit_delivery(["p1"], channel="push", decided_at=T, sent_at=T)  # type: ignore[list-item]
        with pytest.raises(NaiveDatetime):
            audit_delivery([], channel="push", decided_at=datetime(2026, 1, 1), sent_at=T)
