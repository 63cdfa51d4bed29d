"""Decide, decide_all and release_delayed against a plain restatement of D1-D9 (issue 41).

The equivalence properties of tests/core/hints/test_decide.py compare the fast paths with
`decide`; here every answer is compared with the rules as written, on facts drawn at the
boundaries (a mute ending exactly now, a quiet rule starting or ending this minute, a thread
on a threadless kind, an excluded device with and without connections), and the examples pin
each boundary the mutation run of `nox -s mutants` found unguarded.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.hints.decide import (
    LEVEL_GATE,
    MOBILE,
    Collect,
    Connection,
    Decision,
    Device,
    EventFacts,
    FlushState,
    Policy,
    RecipientFacts,
    Route,
    Send,
    Skip,
    SkipReason,
    Switches,
    Via,
    decide,
    decide_all,
    flush,
    release_delayed,
)
from notify_core.hints.levels import LevelFacts, Preference, resolve_level
from notify_core.hints.quiet import QuietRule, in_quiet_hours
from notify_core.values.errors import InvalidFacts
from notify_core.values.kinds import RUN_KINDS, THREAD_KINDS, Kind
from tests import strategies as s

NOW = datetime(2026, 10, 23, 12, tzinfo=UTC)
SECOND = timedelta(seconds=1)
POLICY = Policy(
    coalesce_window=timedelta(seconds=90), mobile_delay_when_desktop_active=timedelta(seconds=60)
)
PHONE = Device(id="d-phone", platform="ios")
LAPTOP = Device(id="d-laptop", platform="desktop")


def gate(ev: EventFacts, p: RecipientFacts) -> Skip | None:
    """D1-D3 as the rules state them."""
    if p.author or (ev.kind in RUN_KINDS and not p.run_starter):
        return Skip(reason=SkipReason.NOT_RECIPIENT)
    if not p.allowed:
        return Skip(reason=SkipReason.NOT_ALLOWED)
    needed = LEVEL_GATE.get(ev.kind)
    if needed is not None:
        assert p.level is not None
        if resolve_level(p.level, ev.now).level not in needed:
            return Skip(reason=SkipReason.LEVEL)
    elif ev.kind is Kind.ADMIN:
        enabled = p.switches.admin_enabled
        if not (ev.policy.default_admin_enabled if enabled is None else enabled):
            return Skip(reason=SkipReason.ADMIN_DISABLED)
    return None


def active_in_thread(ev: EventFacts, p: RecipientFacts) -> bool:
    """D4: a live, focused connection of a known device that is not the excluded one."""
    known = {d.id for d in p.devices if d.id != ev.exclude_device}
    return ev.kind in THREAD_KINDS and any(
        c.device in known and not c.idle and ev.thread in c.focus for c in p.connections
    )


def quiet(ev: EventFacts, p: RecipientFacts) -> bool:
    """D7: security is never quiet; input_needed may break quiet hours."""
    if ev.kind is Kind.SECURITY:
        return False
    if ev.kind is Kind.INPUT_NEEDED:
        breaks = p.switches.input_needed_breaks_quiet_hours
        if breaks is None:
            breaks = ev.policy.default_input_needed_breaks_quiet_hours
        if breaks:
            return False
    return in_quiet_hours(p.quiet_rules, ev.now, p.user_time_zone)


def expected_decision(ev: EventFacts, p: RecipientFacts) -> Decision:
    """D1-D7 as the rules state them, one step after the other."""
    skip = gate(ev, p)
    if skip is not None:
        return skip
    if active_in_thread(ev, p):
        return Skip(reason=SkipReason.ACTIVE_IN_THREAD)
    devices = [d for d in p.devices if d.id != ev.exclude_device]
    platforms = {d.id: d.platform for d in devices}
    live = {c.device for c in p.connections if c.device in platforms}
    desktop_active = any(
        not c.idle and platforms[c.device] not in MOBILE
        for c in p.connections
        if c.device in platforms
    )
    delay = (
        desktop_active
        and ev.kind is not Kind.SECURITY
        and ev.policy.mobile_delay_when_desktop_active > timedelta(0)
    )
    routes = []
    for d in devices:
        if d.id in live:
            routes.append(Route(device=d.id, via=Via.GATEWAY))
        elif delay and d.platform in MOBILE:
            due = ev.now + ev.policy.mobile_delay_when_desktop_active
            routes.append(Route(device=d.id, via=Via.PUSH_DELAYED, due=due))
        else:
            routes.append(Route(device=d.id, via=Via.PUSH))
    if not routes:
        return Skip(reason=SkipReason.NO_ROUTE)
    window = ev.policy.coalesce_window
    opens = ev.now + window if window and ev.kind in THREAD_KINDS else None
    if p.window_end is not None and p.window_end > ev.now:
        if ev.kind is Kind.MESSAGE:
            return Collect(until=p.window_end)
        opens = None
    return Send(routes=tuple(routes), quiet=quiet(ev, p), opens_window_until=opens)


def expected_release(ev: EventFacts, p: RecipientFacts, device: str, read: bool) -> Decision:
    """D9 as the rule states it."""
    if read:
        return Skip(reason=SkipReason.READ)
    skip = gate(ev, p)
    if skip is not None:
        return skip
    if active_in_thread(ev, p):
        return Skip(reason=SkipReason.ACTIVE_IN_THREAD)
    if device == ev.exclude_device or device not in {d.id for d in p.devices}:
        return Skip(reason=SkipReason.NO_ROUTE)
    return Send(routes=(Route(device=device, via=Via.PUSH),), quiet=quiet(ev, p))


class TestAgainstTheRules:
    """Every answer equals the rules' own, on facts drawn at the boundaries."""

    @given(ev=s.events(), data=st.data())
    def test_d1_to_d7_decide_and_decide_all_follow_the_rules(
        self, ev: EventFacts, data: st.DataObject
    ) -> None:
        people = data.draw(st.lists(s.recipients(ev.now), min_size=1, max_size=2))
        expected = [expected_decision(ev, p) for p in people]
        assert [decide(ev, p) for p in people] == expected
        assert decide_all(ev, people) == expected

    @given(kind=st.sampled_from(sorted(LEVEL_GATE)), now=s.moments, data=st.data())
    def test_d3_d7_the_inlined_loop_follows_the_rules_at_the_boundaries(
        self, kind: Kind, now: datetime, data: st.DataObject
    ) -> None:
        ev = EventFacts(now=now, kind=kind, thread="t-1", policy=data.draw(s.policies))
        people = data.draw(st.lists(s.gated_recipients(now), min_size=1, max_size=2))
        assert decide_all(ev, people) == [expected_decision(ev, p) for p in people]

    @given(ev=s.events(), data=st.data())
    def test_d8_flush_follows_the_rule(self, ev: EventFacts, data: st.DataObject) -> None:
        p = data.draw(s.recipients(ev.now))
        state = FlushState(
            collected=data.draw(st.integers(0, 2)), unread=data.draw(st.integers(0, 2))
        )
        if ev.thread is None:
            with pytest.raises(InvalidFacts) as err:
                flush(state, ev, p)
            assert (err.value.code, err.value.message, err.value.pointer) == (
                "missing_thread",
                "a window belongs to a thread",
                "/thread",
            )
            return
        # D8: D1-D5 and D7 again as a message at the flush time, the window ignored.
        if state.collected == 0:
            expected: Decision = Skip(reason=SkipReason.NOTHING_COLLECTED)
        elif state.unread == 0:
            expected = Skip(reason=SkipReason.READ)
        else:
            as_message = EventFacts(
                now=ev.now,
                kind=Kind.MESSAGE,
                thread=ev.thread,
                policy=ev.policy,
                exclude_device=ev.exclude_device,
            )
            expected = expected_decision(as_message, attrs.evolve(p, window_end=None))
            if isinstance(expected, Send):
                expected = attrs.evolve(expected, count=state.unread)
        assert flush(state, ev, p) == expected

    @given(ev=s.events(), data=st.data())
    def test_d9_release_delayed_follows_the_rule(self, ev: EventFacts, data: st.DataObject) -> None:
        p = data.draw(s.recipients(ev.now))
        # The excluded device is released often: it must never get the push.
        device = data.draw(st.one_of(st.just(ev.exclude_device or "d-a"), s.device_ids))
        read = data.draw(st.booleans())
        assert release_delayed(ev, p, device, read) == expected_release(ev, p, device, read)


def event(kind: str = "message", **kw: object) -> EventFacts:
    thread = None if kind in ("security", "admin") else "t-1"
    fields: dict[str, object] = {"now": NOW, "kind": kind, "thread": thread, "policy": POLICY} | kw
    return EventFacts(**fields)  # type: ignore[arg-type]


def person(**kw: object) -> RecipientFacts:
    level = LevelFacts(instance_default="all")
    fields: dict[str, object] = {"allowed": True, "level": level, "devices": [PHONE]} | kw
    return RecipientFacts(**fields)  # type: ignore[arg-type]


def both(ev: EventFacts, p: RecipientFacts) -> Decision:
    """`decide`'s answer, checked to be `decide_all`'s too (its inlined fast path)."""
    answer = decide(ev, p)
    assert decide_all(ev, [p]) == [answer]
    return answer


class TestBoundaries:
    """The boundaries one at a time, each through `decide` and `decide_all`."""

    def test_l4_a_mute_ending_exactly_now_is_over(self) -> None:
        for row in ("thread", "channel", "space"):
            ended = LevelFacts(**{row: Preference(level="all", muted_until=NOW)})  # type: ignore[arg-type]
            assert isinstance(both(event(), person(level=ended)), Send), row
            lasting = LevelFacts(**{row: Preference(level="all", muted_until=NOW + SECOND)})  # type: ignore[arg-type]
            assert both(event(), person(level=lasting)) == Skip(reason=SkipReason.LEVEL), row

    def test_q4_an_overnight_rule_ends_at_its_end_minute(self) -> None:
        # 22:00-12:00 UTC every day: quiet at 11:59:59, no longer at 12:00 (NOW).
        night = QuietRule(weekdays=127, start_local="22:00", end_local="12:00", time_zone="UTC")
        p = person(quiet_rules=[night])
        assert not both(event(), p).quiet  # type: ignore[union-attr]
        assert both(event(now=NOW - SECOND), p).quiet  # type: ignore[union-attr]
        # Starting at the very minute covers it.
        day = QuietRule(weekdays=127, start_local="12:00", end_local="13:00", time_zone="UTC")
        assert both(event(), person(quiet_rules=[day])).quiet  # type: ignore[union-attr]
        assert not both(event(now=NOW - SECOND), person(quiet_rules=[day])).quiet  # type: ignore[union-attr]

    def test_d5_the_excluded_device_without_connections_gets_no_route(self) -> None:
        p = person(devices=[PHONE, LAPTOP])
        for kind in ("mention", "message", "security"):
            decision = both(event(kind, exclude_device="d-phone"), p)
            assert isinstance(decision, Send)
            assert [r.device for r in decision.routes] == ["d-laptop"], kind
            assert both(event(kind, exclude_device="d-phone"), person()) == Skip(
                reason=SkipReason.NO_ROUTE
            )

    def test_d4_the_excluded_device_focused_in_the_thread_is_not_presence(self) -> None:
        focused = Connection(device="d-laptop", focus={"t-1"}, idle=False)
        p = person(devices=[PHONE, LAPTOP], connections=[focused])
        assert both(event("mention"), p) == Skip(reason=SkipReason.ACTIVE_IN_THREAD)
        decision = both(event("mention", exclude_device="d-laptop"), p)
        assert isinstance(decision, Send)
        assert decision.routes == (Route(device="d-phone", via=Via.PUSH),)
        # Released later, the same: the excluded device's focus does not hold the push back.
        release = release_delayed(event("mention", exclude_device="d-laptop"), p, "d-phone", False)
        assert release == Send(routes=(Route(device="d-phone", via=Via.PUSH),), quiet=False)
        assert release_delayed(event("mention"), p, "d-phone", False) == Skip(
            reason=SkipReason.ACTIVE_IN_THREAD
        )
        assert release_delayed(
            event("mention", exclude_device="d-phone"), person(), "d-phone", False
        ) == Skip(reason=SkipReason.NO_ROUTE)

    def test_k2_a_thread_on_a_security_hint_is_ignored(self) -> None:
        focused = Connection(device="d-laptop", focus={"t-1"}, idle=False)
        p = person(devices=[PHONE, LAPTOP], connections=[focused])
        decision = both(event("security", thread="t-1"), p)
        assert isinstance(decision, Send)
        assert [r.via for r in decision.routes] == [Via.GATEWAY, Via.PUSH]
        assert decision.opens_window_until is None
        release = release_delayed(event("security", thread="t-1"), p, "d-phone", False)
        assert release == Send(routes=(Route(device="d-phone", via=Via.PUSH),), quiet=False)

    def test_d3_the_admin_switch_overrides_the_policy_default(self) -> None:
        off = Policy(default_admin_enabled=False)
        on = person(switches=Switches(admin_enabled=True))
        assert isinstance(both(event("admin", policy=off), on), Send)
        assert both(event("admin", policy=off), person()) == Skip(reason=SkipReason.ADMIN_DISABLED)
        silenced = person(switches=Switches(admin_enabled=False))
        assert both(event("admin"), silenced) == Skip(reason=SkipReason.ADMIN_DISABLED)


def test_d3_a_leveled_kind_without_level_facts_says_so() -> None:
    for call in (lambda p: decide(event("message"), p), lambda p: decide_all(event(), [p])):
        try:
            call(person(level=None))
        except InvalidFacts as err:
            assert (err.code, err.message, err.pointer) == (
                "missing_level",
                "this kind needs the level facts",
                "/level",
            )
        else:
            raise AssertionError("no InvalidFacts")


def test_d7_d9_a_released_security_hint_is_never_quiet() -> None:
    always = QuietRule(weekdays=127, start_local="00:00", end_local="00:00")
    p = person(quiet_rules=[always])
    assert release_delayed(event("security"), p, "d-phone", False) == Send(
        routes=(Route(device="d-phone", via=Via.PUSH),), quiet=False
    )
    assert release_delayed(event("mention"), p, "d-phone", False) == Send(
        routes=(Route(device="d-phone", via=Via.PUSH),), quiet=True
    )


def test_d8_a_flush_is_decided_as_a_message_whatever_the_kind_given() -> None:
    state = FlushState(collected=2, unread=1)
    p = person(devices=[PHONE, LAPTOP])
    for kind in ("message", "mention", "security"):
        flushed = flush(state, event(kind, thread="t-1"), p)
        assert flushed == Send(
            routes=(Route(device="d-laptop", via=Via.PUSH), Route(device="d-phone", via=Via.PUSH)),
            quiet=False,
            opens_window_until=NOW + timedelta(seconds=90),
            count=1,
        ), kind
    # Presence in the thread holds the flush back, as it would a message.
    focused = Connection(device="d-laptop", focus={"t-1"}, idle=False)
    present = person(devices=[PHONE, LAPTOP], connections=[focused])
    assert flush(state, event("security", thread="t-1"), present) == Skip(
        reason=SkipReason.ACTIVE_IN_THREAD
    )
    assert flush(state, event("message"), person(devices=[])) == Skip(reason=SkipReason.NO_ROUTE)


def test_d8_flush_counts_must_not_be_negative() -> None:
    with pytest.raises(InvalidFacts) as err:
        FlushState(collected=1, unread=-1)
    assert (err.value.code, err.value.message, err.value.pointer) == (
        "invalid_count",
        "unread must be >= 0: -1",
        "/unread",
    )


def test_d7_decide_all_reads_each_persons_zone_for_rules_without_one() -> None:
    # 11:00-13:00 without a zone: 12:00 in UTC, 21:00 in Tokyo; 14:00 in Berlin (CEST).
    midday = QuietRule(weekdays=127, start_local="11:00", end_local="13:00")
    berlin = QuietRule(
        weekdays=127, start_local="14:00", end_local="15:00", time_zone="Europe/Berlin"
    )
    people = [
        person(quiet_rules=[midday], user_time_zone="UTC"),
        person(quiet_rules=[midday], user_time_zone="Asia/Tokyo"),
        person(quiet_rules=[midday], user_time_zone=None),
        person(quiet_rules=[berlin, midday], user_time_zone="Asia/Tokyo"),
    ]
    decisions = decide_all(event(), people)
    assert [d.quiet for d in decisions] == [True, False, True, True]  # type: ignore[union-attr]
    assert decisions == [decide(event(), p) for p in people]
