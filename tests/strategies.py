"""Hypothesis strategies for the core's values, kept in one place."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from hypothesis import strategies as st

from notify_core.hints.decide import (
    Connection,
    Device,
    EventFacts,
    Policy,
    RecipientFacts,
    Switches,
)
from notify_core.hints.levels import Level, LevelFacts, Preference
from notify_core.hints.quiet import QuietRule
from notify_core.values.kinds import Kind

#: Zones with unusual offsets and DST rules (half-hour DST, 45-minute offsets).
ZONES = (
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "UTC",
)

levels = st.sampled_from(list(Level))
zones = st.sampled_from(ZONES)

#: Instants from 2024 to 2028, to the second, often near a DST change.
instants = st.datetimes(
    min_value=datetime(2024, 1, 1), max_value=datetime(2028, 12, 31), timezones=st.just(UTC)
).map(lambda t: t.replace(microsecond=0))
_dst_changes = st.sampled_from(
    [
        datetime(2026, 3, 29, 1, tzinfo=UTC),  # Europe/Berlin spring forward
        datetime(2026, 10, 25, 1, tzinfo=UTC),  # Europe/Berlin fall back
        datetime(2026, 3, 8, 7, tzinfo=UTC),  # America/New_York spring forward
        datetime(2026, 11, 1, 6, tzinfo=UTC),  # America/New_York fall back
        datetime(2026, 4, 4, 15, tzinfo=UTC),  # Australia/Lord_Howe 30 min back
        datetime(2026, 10, 3, 15, 30, tzinfo=UTC),  # Australia/Lord_Howe 30 min forward
        datetime(2026, 4, 4, 14, tzinfo=UTC),  # Pacific/Chatham back
        datetime(2026, 9, 26, 14, tzinfo=UTC),  # Pacific/Chatham forward
    ]
)
near_dst = st.builds(
    lambda base, minutes: base + timedelta(minutes=minutes),
    _dst_changes,
    st.integers(min_value=-36 * 60, max_value=36 * 60),
)
moments = st.one_of(instants, near_dst)

local_times = st.builds(time, st.integers(0, 23), st.sampled_from([0, 1, 15, 29, 30, 45, 59]))
rules = st.builds(
    QuietRule,
    weekdays=st.integers(1, 127),
    start_local=local_times,
    end_local=local_times,
    time_zone=st.one_of(st.none(), zones),
    enabled=st.booleans(),
)
rule_lists = st.lists(rules, max_size=3)

preferences = st.builds(
    Preference,
    level=levels,
    muted_until=st.one_of(st.none(), moments),
)
level_facts = st.builds(
    LevelFacts,
    thread=st.one_of(st.none(), preferences),
    channel=st.one_of(st.none(), preferences),
    space=st.one_of(st.none(), preferences),
    channel_default=st.one_of(st.none(), levels),
    direct_message=st.booleans(),
    personal_default=st.one_of(st.none(), levels, st.just("loud")),
    instance_default=levels,
)

device_ids = st.sampled_from(["d-a", "d-b", "d-c", "d-d"])
devices = st.lists(
    st.builds(
        Device, id=device_ids, platform=st.sampled_from(["ios", "android", "desktop", "web"])
    ),
    max_size=4,
    unique_by=lambda d: d.id,
)
threads = st.sampled_from(["t-1", "t-2"])
connections = st.lists(
    st.builds(
        Connection,
        device=st.sampled_from(["d-a", "d-b", "d-c", "d-d", "d-unknown"]),
        focus=st.frozensets(threads, max_size=2),
        idle=st.booleans(),
    ),
    max_size=3,
)
policies = st.builds(
    Policy,
    coalesce_window=st.sampled_from([timedelta(0), timedelta(seconds=60), timedelta(seconds=90)]),
    mobile_delay_when_desktop_active=st.sampled_from([timedelta(0), timedelta(seconds=60)]),
    default_admin_enabled=st.booleans(),
    default_input_needed_breaks_quiet_hours=st.booleans(),
)
decided_kinds = st.sampled_from([k for k in Kind if k is not Kind.SYNC])


@st.composite
def events(draw: st.DrawFn) -> EventFacts:
    """Any valid event facts: a thread for thread kinds, sometimes an excluded device."""
    kind = draw(decided_kinds)
    thread = draw(threads) if kind not in (Kind.SECURITY, Kind.ADMIN) else None
    return EventFacts(
        now=draw(moments),
        kind=kind,
        thread=thread,
        policy=draw(policies),
        exclude_device=draw(st.one_of(st.none(), device_ids)),
    )


@st.composite
def recipients(draw: st.DrawFn, now: datetime | None = None) -> RecipientFacts:
    """Any valid recipient facts; windows near ``now`` when given."""
    base = now or datetime(2026, 10, 23, 12, tzinfo=UTC)
    window = draw(
        st.one_of(
            st.none(),
            st.integers(-120, 120).map(lambda s: base + timedelta(seconds=s)),
        )
    )
    return RecipientFacts(
        allowed=draw(st.booleans()),
        author=draw(st.booleans()),
        run_starter=draw(st.booleans()),
        level=draw(level_facts),
        user_time_zone=draw(st.one_of(st.none(), zones, st.just("Mars/Olympus"))),
        quiet_rules=draw(rule_lists),
        switches=draw(
            st.builds(
                Switches,
                admin_enabled=st.one_of(st.none(), st.booleans()),
                input_needed_breaks_quiet_hours=st.one_of(st.none(), st.booleans()),
            )
        ),
        devices=draw(devices),
        connections=draw(connections),
        window_end=window,
    )
