"""`new_recipient_facts` builds the value `RecipientFacts(...)` builds, or refuses alike."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.hints.decision_values import (
    Connection,
    Device,
    Platform,
    RecipientFacts,
    Switches,
    new_recipient_facts,
)
from notify_core.hints.levels import LevelFacts
from notify_core.hints.quiet import QuietRule
from notify_core.values.errors import NotifyError

_DEVICES = st.lists(
    st.builds(
        Device,
        id=st.sampled_from(["d1", "d2", "d3", "a0"]),
        platform=st.sampled_from(list(Platform)),
    ),
    max_size=3,
)
_RULES = st.lists(
    st.builds(
        QuietRule, weekdays=st.just(127), start_local=st.just("22:00"), end_local=st.just("07:00")
    ),
    max_size=2,
)


@given(
    allowed=st.booleans(),
    starter=st.booleans(),
    level=st.sampled_from([None, LevelFacts(instance_default="all")]),
    zone=st.sampled_from([None, "Europe/Berlin"]),
    rules=_RULES,
    switches=st.sampled_from([Switches(), Switches(admin_enabled=True)]),
    devices=_DEVICES,
    as_tuples=st.booleans(),
    connected=st.booleans(),
    window_end=st.sampled_from([None, datetime(2026, 10, 19, 6, tzinfo=UTC)]),
)
def test_the_same_value_as_the_keyword_init(
    allowed: bool,
    starter: bool,
    level: LevelFacts | None,
    zone: str | None,
    rules: list[QuietRule],
    switches: Switches,
    devices: list[Device],
    as_tuples: bool,
    connected: bool,
    window_end: datetime | None,
) -> None:
    connections = [Connection(device=d.id) for d in devices[:1]] if connected else []
    kinds = (
        (tuple(rules), tuple(devices), tuple(connections))
        if as_tuples
        else (rules, devices, connections)
    )
    fast = new_recipient_facts(
        allowed, starter, level, zone, kinds[0], switches, kinds[1], kinds[2], window_end
    )
    plain = RecipientFacts(
        allowed=allowed,
        run_starter=starter,
        level=level,
        user_time_zone=zone,
        quiet_rules=kinds[0],
        switches=switches,
        devices=kinds[1],
        connections=kinds[2],
        window_end=window_end,
    )
    assert fast == plain
    assert [getattr(fast, f) for f in ("_zone_cache", "_routes_cache")] == [None, None]
    assert type(fast.devices) is tuple and type(fast.connections) is tuple
    assert type(fast.quiet_rules) is tuple


def test_a_naive_window_end_is_refused_alike() -> None:
    naive = datetime(2026, 10, 19, 6)
    with pytest.raises(NotifyError) as plain:
        RecipientFacts(allowed=True, window_end=naive)
    with pytest.raises(NotifyError) as fast:
        new_recipient_facts(True, False, None, None, (), Switches(), (), (), naive)
    assert (fast.value.code, fast.value.message) == (plain.value.code, plain.value.message)
