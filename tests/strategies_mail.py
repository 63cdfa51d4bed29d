"""Hypothesis strategies for notify_core.mail: instants near every offset change of the zones
the cadence tests use, people, categories and tokens."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import strategies as st

from notify_core.inbox.categories import CATEGORY_BY_KEY
from notify_core.mail import EmailSchedule, slot_offset

#: Zones with daylight-saving gaps and repeated hours of one hour (Berlin, New York), of 30
#: minutes (Lord Howe), a gap just before midnight (Nuuk: 23:00 -02 is 00:00 -01 on the last
#: Sunday of March, from 2024), a skipped day (Apia, 2011-12-30), a 45-minute offset and no DST.
MAIL_ZONES = (
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Nuuk",
    "Pacific/Apia",
    "Asia/Kathmandu",
    "UTC",
)
#: Every category of the inbox registry with its digest flag.
DIGEST = {key: category.digest for key, category in CATEGORY_BY_KEY.items()}
KNOWN = frozenset(DIGEST)
SECRET = bytes(range(32))


@functools.cache
def offset_changes(zone: str) -> tuple[datetime, ...]:
    """Instants (to the hour) just before each change of the zone's UTC offset in 2011-2012
    and 2025-2027: a day at a time, then an hour at a time within a day that changes."""
    tz = ZoneInfo(zone)

    def offset(t: datetime) -> timedelta | None:
        return t.astimezone(tz).utcoffset()

    found = []
    for start, end in ((2011, 2013), (2025, 2028)):
        day = datetime(start, 1, 1, tzinfo=UTC)
        while day < datetime(end, 1, 1, tzinfo=UTC):
            following = day + timedelta(days=1)
            if offset(day) != offset(following):
                hour = day
                while offset(hour) == offset(hour + timedelta(hours=1)):
                    hour += timedelta(hours=1)
                found.append(hour)
            day = following
    return tuple(found)


mail_zones = st.sampled_from(MAIL_ZONES)
people = st.text(min_size=1, max_size=20)
delays = st.one_of(
    st.sampled_from([0, 180, 3600, 86_400]), st.floats(min_value=0, max_value=2 * 86_400)
).map(lambda s: timedelta(seconds=s))


def _near(zone: str) -> st.SearchStrategy[datetime]:
    changes = offset_changes(zone)
    plain = st.datetimes(
        min_value=datetime(2010, 1, 1), max_value=datetime(2030, 12, 31), timezones=st.just(UTC)
    )
    if not changes:
        return plain
    close = st.builds(
        lambda anchor, seconds: anchor + timedelta(seconds=seconds),
        st.sampled_from(changes),
        st.integers(min_value=-2 * 86_400, max_value=2 * 86_400),
    )
    return st.one_of(close, close, plain)


@st.composite
def zone_and_now(draw: st.DrawFn) -> tuple[str, datetime]:
    """A zone and an instant, often within two days of one of its offset changes."""
    zone = draw(mail_zones)
    now = draw(_near(zone))
    return zone, now.astimezone(ZoneInfo(draw(mail_zones)))  # any offset on input


schedules = st.one_of(
    st.just(EmailSchedule(schedule="immediate")),
    st.just(EmailSchedule(schedule="hourly")),
    st.integers(min_value=0, max_value=23).map(
        lambda h: EmailSchedule(schedule="daily", daily_hour=h)
    ),
)
category_sets = st.lists(st.sampled_from(sorted(KNOWN)), min_size=1, max_size=8)


@functools.cache
def person_with_offset(offset: int) -> str:
    """The first id ``p0``, ``p1``, ... whose slot offset is ``offset`` seconds."""
    n = 0
    while slot_offset(f"p{n}") != offset:
        n += 1
    return f"p{n}"
