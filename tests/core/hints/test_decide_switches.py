"""`SWITCH_KINDS`: a decision of another kind does not read the switches, so a fan-out of it
asks the store for none (`Pipeline._decide_fan_out`)."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from notify_core.hints.decide import (
    SWITCH_KINDS,
    Device,
    EventFacts,
    Policy,
    RecipientFacts,
    Skip,
    Switches,
    decide,
    decide_all,
    explain,
)
from notify_core.hints.levels import LevelFacts
from notify_core.hints.quiet import QuietRule
from notify_core.values.kinds import Kind
from tests import strategies as s

ALL_SWITCHES = st.builds(
    Switches,
    admin_enabled=st.one_of(st.none(), st.booleans()),
    input_needed_breaks_quiet_hours=st.one_of(st.none(), st.booleans()),
)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), event=s.events(), switches=ALL_SWITCHES)
def test_kinds_without_switches_decide_the_same_whatever_the_switches(
    data: st.DataObject, event: EventFacts, switches: Switches
) -> None:
    person = data.draw(s.recipients(event.now))
    other = attrs.evolve(person, switches=switches)
    if event.kind in SWITCH_KINDS:
        return  # the two kinds that read them: the tests of D3 and D7 cover them
    assert decide(event, other) == decide(event, person)
    assert decide_all(event, [other]) == decide_all(event, [person])


def test_the_switch_kinds_do_read_the_switches() -> None:
    """The set is not too large: each of its kinds decides differently on some switch."""
    now = datetime(2026, 10, 21, 12, tzinfo=UTC)  # a Wednesday noon
    policy = Policy()
    person = RecipientFacts(
        allowed=True,
        run_starter=True,
        level=LevelFacts(instance_default="all"),
        devices=[Device(id="d-1", platform="android")],
        quiet_rules=[QuietRule(weekdays=127, start_local="00:00", end_local="00:00")],
        user_time_zone="UTC",
    )
    admin = EventFacts(now=now, kind=Kind.ADMIN, thread=None, policy=policy)
    off = attrs.evolve(person, switches=Switches(admin_enabled=False))
    on = attrs.evolve(person, switches=Switches(admin_enabled=True))
    assert isinstance(decide(admin, off), Skip) and not isinstance(decide(admin, on), Skip)
    needed = EventFacts(now=now, kind=Kind.INPUT_NEEDED, thread="t-1", policy=policy)
    breaks = attrs.evolve(person, switches=Switches(input_needed_breaks_quiet_hours=True))
    keeps = attrs.evolve(person, switches=Switches(input_needed_breaks_quiet_hours=False))
    assert decide(needed, breaks) != decide(needed, keeps)
    assert explain(needed, breaks) != explain(needed, keeps)
