"""Hypothesis strategies for the core's values, kept in one place."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

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


def near(now: datetime) -> st.SearchStrategy[datetime]:
    """Instants at the boundaries around ``now`` (issue 41): ``now`` itself, a second before
    and after, a few minutes or hours away, or any moment (DST changes included)."""
    second = timedelta(seconds=1)
    return st.one_of(
        st.just(now),
        st.sampled_from([now - second, now + second]),
        st.integers(-36 * 3600, 36 * 3600).map(lambda s: now + timedelta(seconds=s)),
        moments,
    )


@st.composite
def rules_near(draw: st.DrawFn, now: datetime, user_zone: str | None) -> QuietRule:
    """A quiet rule that starts or ends at ``now``'s wall-clock minute, or a minute either
    side, in the rule's zone (the person's when it has none); often on every weekday."""
    zone = draw(st.one_of(st.none(), zones))
    name = zone or user_zone
    wall = now.astimezone(ZoneInfo(name) if name in ZONES else UTC)
    minute = wall.hour * 60 + wall.minute + draw(st.sampled_from([-1, 0, 1]))
    edge = time(minute % 1440 // 60, minute % 60)
    other = draw(local_times)
    start, end = (edge, other) if draw(st.booleans()) else (other, edge)
    return QuietRule(
        weekdays=draw(st.one_of(st.just(127), st.integers(1, 127))),
        start_local=start,
        end_local=end,
        time_zone=zone,
        enabled=draw(st.booleans()),
    )


def preferences_at(instants: st.SearchStrategy[datetime]) -> st.SearchStrategy[Preference]:
    """Preference rows whose ``muted_until`` is drawn from ``instants``."""
    return st.builds(Preference, level=levels, muted_until=st.one_of(st.none(), instants))


def level_facts_at(instants: st.SearchStrategy[datetime]) -> st.SearchStrategy[LevelFacts]:
    """Level facts whose rows' ``muted_until`` is drawn from ``instants``."""
    rows = st.one_of(st.none(), preferences_at(instants))
    return st.builds(
        LevelFacts,
        thread=rows,
        channel=rows,
        space=rows,
        channel_default=st.one_of(st.none(), levels),
        direct_message=st.booleans(),
        personal_default=st.one_of(st.none(), levels, st.just("loud")),
        instance_default=levels,
    )


preferences = preferences_at(moments)
level_facts = level_facts_at(moments)

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
    """Any valid event facts: a thread for thread kinds, sometimes one for the threadless
    kinds too (which ignore it), sometimes an excluded device."""
    kind = draw(decided_kinds)
    if kind in (Kind.SECURITY, Kind.ADMIN):
        thread = draw(st.one_of(st.none(), threads))
    else:
        thread = draw(threads)
    return EventFacts(
        now=draw(moments),
        kind=kind,
        thread=thread,
        policy=draw(policies),
        exclude_device=draw(st.one_of(st.none(), device_ids)),
    )


@st.composite
def recipients(draw: st.DrawFn, now: datetime | None = None) -> RecipientFacts:
    """Any valid recipient facts; windows, mutes and quiet-rule edges near ``now`` when
    given; often no connection at all."""
    base = now or datetime(2026, 10, 23, 12, tzinfo=UTC)
    user_zone = draw(st.one_of(st.none(), zones, st.just("Mars/Olympus")))
    if now is None:
        level, quiet_rules = draw(level_facts), draw(rule_lists)
    else:
        level = draw(level_facts_at(near(now)))
        quiet_rules = draw(st.lists(st.one_of(rules, rules_near(now, user_zone)), max_size=3))
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
        level=level,
        user_time_zone=user_zone,
        quiet_rules=quiet_rules,
        switches=draw(
            st.builds(
                Switches,
                admin_enabled=st.one_of(st.none(), st.booleans()),
                input_needed_breaks_quiet_hours=st.one_of(st.none(), st.booleans()),
            )
        ),
        devices=draw(devices),
        connections=draw(st.one_of(st.just([]), connections)),
        window_end=window,
    )


@st.composite
def gated_recipients(draw: st.DrawFn, now: datetime) -> RecipientFacts:
    """Recipients who pass D1-D2 and whose facts sit at the boundaries around ``now``: a
    row muted until about ``now``, quiet rules starting or ending at ``now``'s minute; the
    facts `decide_all`'s inlined loop reads for every leveled kind."""
    user_zone = draw(st.one_of(st.none(), zones))
    row = st.builds(
        Preference, level=st.sampled_from([Level.ALL, Level.MENTIONS]), muted_until=near(now)
    )
    return RecipientFacts(
        allowed=True,
        run_starter=True,
        level=draw(
            st.builds(
                LevelFacts,
                thread=st.one_of(st.none(), row),
                channel=row,
                instance_default=levels,
            )
        ),
        user_time_zone=user_zone,
        quiet_rules=draw(st.lists(rules_near(now, user_zone), min_size=1, max_size=2)),
        devices=draw(devices),
        connections=draw(st.one_of(st.just([]), connections)),
        window_end=draw(st.one_of(st.none(), near(now))),
    )
