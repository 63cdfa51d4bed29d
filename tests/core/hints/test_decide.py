"""Decide, flush, release_delayed and explain: rules D1-D11."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.hints.decide import (
    LEVEL_GATE,
    METRIC_REASONS,
    Collect,
    Connection,
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
    explain,
    flush,
    gate,
    release_delayed,
)
from notify_core.hints.levels import LevelFacts, Preference
from notify_core.hints.quiet import QuietRule
from notify_core.values.errors import InvalidFacts, NaiveDatetime
from notify_core.values.kinds import Kind
from tests import strategies as s

NOW = datetime(2026, 10, 23, 12, tzinfo=UTC)
_GATE_REASONS = frozenset(
    {SkipReason.NOT_RECIPIENT, SkipReason.NOT_ALLOWED, SkipReason.LEVEL, SkipReason.ADMIN_DISABLED}
)
POLICY = Policy(
    coalesce_window=timedelta(seconds=90), mobile_delay_when_desktop_active=timedelta(seconds=60)
)
ALL = LevelFacts(instance_default="all")
MENTIONS = LevelFacts(instance_default="mentions")
MUTE = LevelFacts(instance_default="mute")
PHONE = Device(id="d-phone", platform="ios")
LAPTOP = Device(id="d-laptop", platform="desktop")
ALWAYS_QUIET = QuietRule(weekdays=127, start_local="00:00", end_local="00:00")


def event(kind: str = "message", **kw: object) -> EventFacts:
    thread = None if kind in ("security", "admin") else "t-1"
    fields: dict[str, object] = {"now": NOW, "kind": kind, "thread": thread, "policy": POLICY} | kw
    return EventFacts(**fields)  # type: ignore[arg-type]


def person(**kw: object) -> RecipientFacts:
    fields: dict[str, object] = {"allowed": True, "level": ALL, "devices": [PHONE]} | kw
    return RecipientFacts(**fields)  # type: ignore[arg-type]


def skip(reason: str) -> Skip:
    return Skip(reason=SkipReason(reason))


class TestSteps:
    """D1-D7, one step at a time."""

    def test_d1_author_is_never_a_recipient(self) -> None:
        for kind in ("message", "mention", "dm", "security"):
            assert decide(event(kind), person(author=True, run_starter=True)) == skip(
                "not_recipient"
            )

    @pytest.mark.parametrize("kind", ["run_done", "run_failed", "input_needed"])
    def test_d1_run_kinds_only_to_the_starter(self, kind: str) -> None:
        assert decide(event(kind), person()) == skip("not_recipient")
        assert isinstance(decide(event(kind), person(run_starter=True)), Send)

    def test_d2_not_allowed(self) -> None:
        assert decide(event("mention"), person(allowed=False)) == skip("not_allowed")
        assert decide(event("security"), person(allowed=False)) == skip("not_allowed")

    @pytest.mark.parametrize(
        ("kind", "level", "goes"),
        [
            ("message", ALL, True),
            ("message", MENTIONS, False),
            ("message", MUTE, False),
            ("mention", ALL, True),
            ("mention", MENTIONS, True),
            ("mention", MUTE, False),
            ("dm", MENTIONS, True),
            ("dm", MUTE, False),
            ("run_done", MENTIONS, True),
            ("run_done", MUTE, False),
            ("run_failed", MUTE, False),
            ("input_needed", MUTE, True),
            ("security", MUTE, True),
        ],
    )
    def test_d3_preference_gate(self, kind: str, level: LevelFacts, goes: bool) -> None:
        decision = decide(event(kind), person(level=level, run_starter=True))
        assert isinstance(decision, Send) if goes else decision == skip("level")

    def test_d3_temporary_mute_blocks_a_mention(self) -> None:
        muted = LevelFacts(thread=Preference(level="all", muted_until=NOW + timedelta(minutes=5)))
        assert decide(event("mention"), person(level=muted)) == skip("level")

    def test_d3_admin_switch_and_policy_default(self) -> None:
        assert isinstance(decide(event("admin"), person()), Send)
        off = person(switches=Switches(admin_enabled=False))
        assert decide(event("admin"), off) == skip("admin_disabled")
        default_off = event("admin", policy=attrs.evolve(POLICY, default_admin_enabled=False))
        assert decide(default_off, person()) == skip("admin_disabled")
        assert isinstance(decide(default_off, person(switches=Switches(admin_enabled=True))), Send)

    def test_decide_all_sends_are_whole_values(self) -> None:
        # decide_all builds its sends without attrs' __init__: every field must still be set.
        people = [person(), person(quiet_rules=[ALWAYS_QUIET]), person(level=MUTE)]
        decisions = decide_all(event(), people)
        assert decisions == [decide(event(), p) for p in people]
        expected = Send(
            routes=(Route(device="d-phone", via=Via.PUSH),),
            quiet=True,
            opens_window_until=NOW + timedelta(seconds=90),
        )
        assert attrs.asdict(decisions[1], recurse=False) == attrs.asdict(expected, recurse=False)

    def test_decide_all_missing_level_is_the_error_of_decide(self) -> None:
        with pytest.raises(InvalidFacts) as err:
            decide_all(event(), [person(), person(level=None)])
        assert err.value.code == "missing_level"

    def test_d3_missing_level_facts_is_an_error(self) -> None:
        with pytest.raises(InvalidFacts) as err:
            decide(event("message"), person(level=None))
        assert err.value.code == "missing_level"

    def test_d4_focused_live_connection_skips(self) -> None:
        conn = Connection(device="d-laptop", focus={"t-1"}, idle=False)
        p = person(devices=[PHONE, LAPTOP], connections=[conn])
        assert decide(event("mention"), p) == skip("active_in_thread")

    def test_d4_idle_other_thread_or_unknown_device_does_not_count(self) -> None:
        for conn in (
            Connection(device="d-laptop", focus={"t-1"}, idle=True),
            Connection(device="d-laptop", focus={"t-2"}, idle=False),
            Connection(device="d-stranger", focus={"t-1"}, idle=False),
        ):
            assert isinstance(
                decide(event("mention"), person(devices=[PHONE, LAPTOP], connections=[conn])), Send
            )

    def test_d4_threadless_kinds_ignore_focus(self) -> None:
        conn = Connection(device="d-laptop", focus={"t-1"}, idle=False)
        decision = decide(event("admin"), person(devices=[LAPTOP], connections=[conn]))
        assert decision == Send(routes=(Route(device="d-laptop", via=Via.GATEWAY),), quiet=False)

    def test_d5_routes_gateway_delayed_push_ordered_by_device_id(self) -> None:
        devices = [
            Device(id="d-z", platform="android"),
            LAPTOP,
            PHONE,
            Device(id="d-web", platform="web"),
        ]
        conn = Connection(device="d-laptop", focus={"t-9"}, idle=False)
        decision = decide(event("mention"), person(devices=devices, connections=[conn]))
        assert isinstance(decision, Send)
        assert decision.routes == (
            Route(device="d-laptop", via=Via.GATEWAY),
            Route(device="d-phone", via=Via.PUSH_DELAYED, due=NOW + timedelta(seconds=60)),
            Route(device="d-web", via=Via.PUSH),
            Route(device="d-z", via=Via.PUSH_DELAYED, due=NOW + timedelta(seconds=60)),
        )

    def test_d5_idle_desktop_does_not_delay_mobile(self) -> None:
        conn = Connection(device="d-laptop", idle=True)
        decision = decide(event("mention"), person(devices=[PHONE, LAPTOP], connections=[conn]))
        assert isinstance(decision, Send)
        assert [r.via for r in decision.routes] == [Via.GATEWAY, Via.PUSH]

    def test_d5_security_is_never_delayed_and_skips_the_pending_device(self) -> None:
        pending = Device(id="d-new", platform="android")
        conn = Connection(device="d-laptop", idle=False)
        decision = decide(
            event("security", exclude_device="d-new"),
            person(
                devices=[PHONE, LAPTOP, pending], connections=[conn, Connection(device="d-new")]
            ),
        )
        assert isinstance(decision, Send)
        assert decision.routes == (
            Route(device="d-laptop", via=Via.GATEWAY),
            Route(device="d-phone", via=Via.PUSH),
        )

    def test_d5_zero_delay_means_push(self) -> None:
        no_delay = event(
            "mention", policy=attrs.evolve(POLICY, mobile_delay_when_desktop_active=timedelta(0))
        )
        conn = Connection(device="d-laptop", idle=False)
        decision = decide(no_delay, person(devices=[PHONE, LAPTOP], connections=[conn]))
        assert isinstance(decision, Send) and decision.routes[1].via is Via.PUSH

    def test_d5_no_device_no_route(self) -> None:
        assert decide(event("mention"), person(devices=[])) == skip("no_route")
        assert decide(event("security", exclude_device="d-phone"), person()) == skip("no_route")

    def test_d5_thread_kind_without_thread_is_an_error(self) -> None:
        with pytest.raises(InvalidFacts) as err:
            EventFacts(now=NOW, kind="mention", policy=POLICY)
        assert (err.value.code, err.value.pointer) == ("missing_thread", "/thread")

    def test_d6_message_in_open_window_is_collected(self) -> None:
        end = NOW + timedelta(seconds=30)
        assert decide(event("message"), person(window_end=end)) == Collect(until=end)

    def test_d6_window_ending_now_is_closed(self) -> None:
        decision = decide(event("message"), person(window_end=NOW))
        assert isinstance(decision, Send) and decision.opens_window_until == NOW + timedelta(
            seconds=90
        )

    def test_d6_other_kinds_go_at_once_and_leave_the_window(self) -> None:
        decision = decide(event("mention"), person(window_end=NOW + timedelta(seconds=30)))
        assert isinstance(decision, Send) and decision.opens_window_until is None

    def test_d6_threadless_kinds_never_touch_windows(self) -> None:
        decision = decide(event("security"), person())
        assert isinstance(decision, Send) and decision.opens_window_until is None

    def test_d6_zero_window_opens_none(self) -> None:
        zero = event("message", policy=attrs.evolve(POLICY, coalesce_window=timedelta(0)))
        decision = decide(zero, person())
        assert isinstance(decision, Send) and decision.opens_window_until is None

    def test_d7_quiet_hours_make_quiet_never_drop(self) -> None:
        decision = decide(event("message"), person(quiet_rules=[ALWAYS_QUIET]))
        assert isinstance(decision, Send) and decision.quiet

    def test_d7_security_never_quiet(self) -> None:
        decision = decide(event("security"), person(quiet_rules=[ALWAYS_QUIET]))
        assert isinstance(decision, Send) and not decision.quiet

    def test_d7_input_needed_breaks_quiet_hours_by_switch_or_default(self) -> None:
        p = person(run_starter=True, quiet_rules=[ALWAYS_QUIET])
        assert decide(event("input_needed"), p).quiet  # type: ignore[union-attr]
        on = attrs.evolve(p, switches=Switches(input_needed_breaks_quiet_hours=True))
        assert not decide(event("input_needed"), on).quiet  # type: ignore[union-attr]
        default_on = event(
            "input_needed",
            policy=attrs.evolve(POLICY, default_input_needed_breaks_quiet_hours=True),
        )
        assert not decide(default_on, p).quiet  # type: ignore[union-attr]

    def test_g2_naive_now_is_refused(self) -> None:
        with pytest.raises(NaiveDatetime):
            EventFacts(now=datetime(2026, 10, 23), kind="security")

    def test_g3_unknown_platform_is_a_documented_error(self) -> None:
        with pytest.raises(InvalidFacts) as err:
            Device(id="d", platform="nokia")
        assert (err.value.code, err.value.pointer) == ("invalid_platform", "/platform")

    def test_g4_ids_are_opaque_strings(self) -> None:
        odd = Device(id="🙂/../'; DROP", platform="web")
        decision = decide(event("mention", thread="∅ thread"), person(devices=[odd]))
        assert isinstance(decision, Send) and decision.routes[0].device == odd.id


class TestFlush:
    """D8: the window's end."""

    def test_d8_nothing_collected_and_read(self) -> None:
        assert flush(FlushState(collected=0, unread=3), event(), person()) == skip(
            "nothing_collected"
        )
        assert flush(FlushState(collected=2, unread=0), event(), person()) == skip("read")

    def test_d8_send_carries_the_unread_count_and_opens_the_next_window(self) -> None:
        decision = flush(
            FlushState(collected=9, unread=10), event("mention"), person(window_end=NOW)
        )
        assert decision == Send(
            routes=(Route(device="d-phone", via=Via.PUSH),),
            quiet=False,
            opens_window_until=NOW + timedelta(seconds=90),
            count=10,
        )

    def test_d8_reruns_the_gate_for_kind_message(self) -> None:
        assert flush(
            FlushState(collected=1, unread=1), event("mention"), person(level=MENTIONS)
        ) == skip("level")
        assert flush(FlushState(collected=1, unread=1), event(), person(allowed=False)) == skip(
            "not_allowed"
        )

    def test_d8_negative_counts_are_an_error(self) -> None:
        with pytest.raises(InvalidFacts) as err:
            FlushState(collected=1, unread=-1)
        assert (err.value.code, err.value.pointer) == ("invalid_count", "/unread")


class TestRelease:
    """D9: a delayed push comes due."""

    def test_d9_read_first(self) -> None:
        assert release_delayed(
            event("mention"), person(allowed=False), "d-phone", read=True
        ) == skip("read")

    def test_d9_revoked_muted_active(self) -> None:
        assert release_delayed(event("mention"), person(allowed=False), "d-phone", False) == skip(
            "not_allowed"
        )
        assert release_delayed(event("mention"), person(level=MUTE), "d-phone", False) == skip(
            "level"
        )
        conn = Connection(device="d-laptop", focus={"t-1"}, idle=False)
        active = person(devices=[PHONE, LAPTOP], connections=[conn])
        assert release_delayed(event("mention"), active, "d-phone", False) == skip(
            "active_in_thread"
        )

    def test_d9_device_gone(self) -> None:
        assert release_delayed(
            event("mention"), person(devices=[LAPTOP]), "d-phone", False
        ) == skip("no_route")

    def test_d9_send_push_of_that_device_quiet_at_release_time(self) -> None:
        decision = release_delayed(
            event("mention"),
            person(devices=[PHONE, LAPTOP], quiet_rules=[ALWAYS_QUIET]),
            "d-phone",
            False,
        )
        assert decision == Send(routes=(Route(device="d-phone", via=Via.PUSH),), quiet=True)


class TestTables:
    """D3 and D10 are tables in code; their content is the rule."""

    def test_d10_metric_reasons(self) -> None:
        assert {r.value: m for r, m in METRIC_REASONS.items()} == {
            "not_allowed": "no_access",
            "level": "preference",
            "admin_disabled": "preference",
            "active_in_thread": "active_in_thread",
            "no_route": "no_registration",
            "read": "read",
            "expired": "expired",
            "no_provider": "no_provider",
            "not_recipient": None,
            "nothing_collected": None,
            # M2-M4: a record's pause, channel off and cap count as the person's preference.
            "suspended": "preference",
            "record_channel_off": "preference",
            "frequency_cap": "preference",
        }
        assert set(METRIC_REASONS) == set(SkipReason)

    def test_d3_gate_table(self) -> None:
        assert {k.value: sorted(v) for k, v in LEVEL_GATE.items()} == {
            "message": ["all"],
            "mention": ["all", "mentions"],
            "dm": ["all", "mentions"],
            "run_done": ["all", "mentions"],
            "run_failed": ["all", "mentions"],
        }


class TestExplain:
    """D11: every decision can be explained."""

    def test_d11_steps_of_a_level_skip(self) -> None:
        explanation = explain(event("message"), person(level=MENTIONS))
        assert [step.rule for step in explanation.steps] == ["D1", "D2", "D3"]
        assert explanation.steps[-1].ended
        assert explanation.steps[-1].read["source"] == "instance_default"

    def test_d11_input_needed_exemption_only_when_the_switch_is_on(self) -> None:
        never = QuietRule(weekdays=1, start_local="00:00", end_local="00:01", time_zone="UTC")
        p = person(run_starter=True, quiet_rules=[never])
        assert "exempt" not in explain(event("input_needed"), p).steps[-1].read
        on = attrs.evolve(p, switches=Switches(input_needed_breaks_quiet_hours=True))
        assert explain(event("input_needed"), on).steps[-1].read["exempt"] == (
            "input_needed_breaks_quiet_hours"
        )

    def test_d11_quiet_rule_that_matched(self) -> None:
        explanation = explain(event("message"), person(quiet_rules=[ALWAYS_QUIET]))
        assert explanation.steps[-1].rule == "D7"
        assert explanation.steps[-1].read["matched_rule"] == 0

    @given(ev=s.events(), data=st.data())
    def test_d11_explanation_agrees_with_decide(self, ev: EventFacts, data: st.DataObject) -> None:
        p = data.draw(s.recipients(ev.now))
        explanation = explain(ev, p)
        assert explanation.decision == decide(ev, p)
        ended = [step for step in explanation.steps if step.ended]
        assert len(ended) <= 1


class TestProperties:
    """Totality and safety over every combination of facts."""

    @given(ev=s.events(), data=st.data())
    def test_d1_to_d7_decide_is_total(self, ev: EventFacts, data: st.DataObject) -> None:
        p = data.draw(s.recipients(ev.now))
        decision = decide(ev, p)
        assert type(decision) in (Skip, Collect, Send)
        if isinstance(decision, Collect):
            assert ev.kind is Kind.MESSAGE and decision.until > ev.now
        if isinstance(decision, Send):
            assert decision.routes
            assert [r.device for r in decision.routes] == sorted(r.device for r in decision.routes)
            assert all((r.via is Via.PUSH_DELAYED) == (r.due is not None) for r in decision.routes)

    @given(ev=s.events(), data=st.data())
    def test_d1_d5_never_the_author_nor_an_excluded_or_unknown_device(
        self, ev: EventFacts, data: st.DataObject
    ) -> None:
        p = data.draw(s.recipients(ev.now))
        decision = decide(ev, p)
        if p.author:
            assert decision == skip("not_recipient")
        if isinstance(decision, Send):
            known = {d.id for d in p.devices}
            assert all(r.device in known and r.device != ev.exclude_device for r in decision.routes)

    @given(ev=s.events(), data=st.data())
    def test_d1_d3_gate_alone_answers_what_decide_answers(
        self, ev: EventFacts, data: st.DataObject
    ) -> None:
        p = data.draw(s.recipients(ev.now))
        skip = gate(
            ev,
            allowed=p.allowed,
            author=p.author,
            run_starter=p.run_starter,
            level=p.level,
            switches=p.switches,
        )
        decision = decide(ev, p)
        if skip is not None:
            assert decision == skip
        else:
            assert not (isinstance(decision, Skip) and decision.reason in _GATE_REASONS)

    @given(ev=s.events(), data=st.data())
    def test_decide_all_equals_decide_for_each(self, ev: EventFacts, data: st.DataObject) -> None:
        people = data.draw(st.lists(s.recipients(ev.now), max_size=5))
        assert decide_all(ev, people) == [decide(ev, p) for p in people]

    @given(ev=s.events(), data=st.data())
    def test_decide_all_equals_decide_with_shared_and_repeated_facts(
        self, ev: EventFacts, data: st.DataObject
    ) -> None:
        # decide_all keeps per-call caches (zones, local times) and per-person derived routes:
        # people met twice, and a second pass over warm values, must answer the same.
        pool = data.draw(st.lists(s.recipients(ev.now), min_size=1, max_size=4))
        picks = data.draw(st.lists(st.integers(0, len(pool) - 1), max_size=12))
        people = [pool[i] for i in picks]
        expected = [decide(ev, p) for p in people]
        assert decide_all(ev, people) == expected
        assert decide_all(ev, people) == expected

    @given(ev=s.events(), data=st.data())
    def test_checked_event_facts_equal_the_constructor_field_by_field(
        self, ev: EventFacts, data: st.DataObject
    ) -> None:
        built = EventFacts.checked(ev.now, ev.kind, ev.thread, ev.policy, ev.exclude_device)
        # eq leaves the derived fields out: compare every slot, then decide the same.
        assert type(built) is EventFacts
        for field in attrs.fields(EventFacts):
            assert getattr(built, field.name) == getattr(ev, field.name), field.name
        p = data.draw(s.recipients(ev.now))
        assert decide(built, p) == decide(ev, p)

    @pytest.mark.parametrize("kind", sorted(set(Kind) - {Kind.SYNC, Kind.SECURITY, Kind.ADMIN}))
    def test_checked_event_facts_refuse_a_thread_kind_without_thread(self, kind: Kind) -> None:
        with pytest.raises(InvalidFacts) as raised:
            EventFacts(now=NOW, kind=kind, policy=POLICY)
        with pytest.raises(InvalidFacts) as checked:
            EventFacts.checked(NOW, kind, None, POLICY)
        assert checked.value.code == raised.value.code == "missing_thread"
        assert str(checked.value) == str(raised.value)

    @given(ev=s.events(), data=st.data())
    def test_d9_release_never_opens_a_window_and_uses_one_push_route(
        self, ev: EventFacts, data: st.DataObject
    ) -> None:
        p = data.draw(s.recipients(ev.now))
        device = data.draw(s.device_ids)
        decision = release_delayed(ev, p, device, data.draw(st.booleans()))
        if isinstance(decision, Send):
            assert decision.routes == (Route(device=device, via=Via.PUSH),)
            assert decision.opens_window_until is None

    @given(ev=s.events(), data=st.data())
    def test_d8_flush_is_total_and_counts_unread(self, ev: EventFacts, data: st.DataObject) -> None:
        p = data.draw(s.recipients(ev.now))
        state = FlushState(
            collected=data.draw(st.integers(1, 5)), unread=data.draw(st.integers(0, 5))
        )
        if ev.thread is None:  # a window belongs to a thread: no flush without one
            with pytest.raises(InvalidFacts):
                flush(state, ev, p)
            return
        decision = flush(state, ev, p)
        assert not isinstance(decision, Collect)
        if isinstance(decision, Send):
            assert decision.count == state.unread > 0 and state.collected > 0
