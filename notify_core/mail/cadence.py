"""When an inbox entry's email falls due (rules E2 and E3).

`email_after_for` is the one place a due time is computed: the fan-out, a coalesce into an
entry without email and a change of schedule all go through it. Time is an argument (G1); zone
data comes from ``zoneinfo`` backed by tzdata. The category facts (its ``digest`` flag) come in
as arguments, so this module does not depend on where the category registry lives.
"""

from __future__ import annotations

import enum
import functools
import hashlib
from collections.abc import Iterable, Set
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Final

import attrs

from notify_core.values.errors import InvalidInput, InvalidRule, InvalidSchedule, UsageError
from notify_core.values.instants import require_instant
from notify_core.values.zones import load_zone

__all__ = [
    "DEFAULT_EMAIL_DELAY",
    "EmailSchedule",
    "QueuedEmail",
    "Schedule",
    "email_after_for",
    "mail_zone",
    "reschedule",
    "slot_offset",
]

#: The window between an entry's first event and its email (E2, ``email_delay_s``).
DEFAULT_EMAIL_DELAY: Final = timedelta(seconds=180)

_HOUR: Final = timedelta(hours=1)
_DAY: Final = timedelta(days=1)


class Schedule(enum.StrEnum):
    """A person's email delivery (``email_schedule``): right away, hourly or daily."""

    IMMEDIATE = "immediate"
    HOURLY = "hourly"
    DAILY = "daily"


def _to_schedule(value: object) -> Schedule:
    if isinstance(value, Schedule):
        return value
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return Schedule(value)
    except ValueError:
        known = ", ".join(s.value for s in Schedule)
        raise InvalidSchedule(
            "unknown_schedule", f"unknown email schedule {value!r} (known: {known})", "/schedule"
        ) from None


def _check_hour(_instance: object, _attribute: object, value: int | None) -> None:
    if value is None:
        return
    if type(value) is not int or not 0 <= value <= 23:
        raise InvalidSchedule(
            "invalid_daily_hour",
            f"the daily hour must be an integer 0-23: {value!r}",
            "/daily_hour",
        )


@attrs.frozen(kw_only=True)
class EmailSchedule:
    """A person's email schedule with its daily hour, validated on construction.

    ``daily_hour`` matters only for ``daily``; a person on another schedule may keep one
    (switching back to daily finds it again).

    Raises:
        InvalidSchedule: an unknown schedule (``unknown_schedule``), an hour that is not an
            integer 0-23 (``invalid_daily_hour``), or ``daily`` without an hour
            (``missing_daily_hour``).

    Example:
        >>> EmailSchedule(schedule="daily", daily_hour=9).schedule
        <Schedule.DAILY: 'daily'>
    """

    schedule: Schedule = attrs.field(default=Schedule.IMMEDIATE, converter=_to_schedule)
    daily_hour: int | None = attrs.field(default=None, validator=_check_hour)

    def __attrs_post_init__(self) -> None:
        if self.schedule is Schedule.DAILY and self.daily_hour is None:
            raise InvalidSchedule(
                "missing_daily_hour", "a daily email schedule needs a daily hour", "/daily_hour"
            )


def slot_offset(person: str) -> int:
    """Return the person's offset within the hour, in seconds (0-3599, rule E2).

    The first 8 bytes of SHA-256 of the person's id (UTF-8), as an unsigned big-endian
    integer, modulo 3600: the same person always lands on the same minute and second, and
    many people on one daily hour spread over the hour instead of falling due at once.

    Example:
        >>> slot_offset("ana")
        3418
    """
    if not isinstance(person, str):
        raise UsageError("invalid_type", f"person must be a string, not {type(person).__name__}")
    # surrogatepass: an id is opaque (G4); a lone surrogate must still give an offset.
    digest = hashlib.sha256(person.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % 3600


#: `slot_offset` with a memory of recent people: one person's entries come again and again, and
#: a fan-out computes the offset of each candidate.
_offset = functools.lru_cache(maxsize=65_536)(slot_offset)


def _zone_or_none(name: str | None, pointer: str) -> tzinfo | None:
    if name is None:
        return None
    if not isinstance(name, str):
        raise UsageError("invalid_type", "a time zone must be a string or None", pointer)
    try:
        return load_zone(name)
    except (InvalidRule, ValueError, KeyError, OSError):
        # E2: a zone that does not load counts as absent. load_zone refuses names tzdata does
        # not list; the others guard against a damaged zone file.
        return None


def mail_zone(time_zone: str | None, site_time_zone: str | None = None) -> tzinfo:
    """Return the zone of a person's daily slot: theirs, else the site's, else UTC (E2).

    A name that tzdata does not know (or that is refused, such as ``Local``) counts as
    absent, and the next zone of the chain is used.

    Example:
        >>> mail_zone("Mars/Olympus", "Europe/Berlin")
        zoneinfo.ZoneInfo(key='Europe/Berlin')
    """
    return (
        _zone_or_none(time_zone, "/time_zone")
        or _zone_or_none(site_time_zone, "/site_time_zone")
        or UTC
    )


def _next_hourly(base: datetime, offset: int) -> datetime:
    slot = base.replace(minute=0, second=0, microsecond=0) + timedelta(seconds=offset)
    return slot if slot >= base else slot + _HOUR


def _next_daily(base: datetime, hour: int, offset: int, zone: tzinfo) -> datetime:
    minute, second = divmod(offset, 60)
    wall = time(hour, minute, second)
    local_day = base.astimezone(zone).date()
    # Slots are non-decreasing from day to day (fold=0 maps wall times monotonically), so the
    # first at or after base wins. The day before comes first: a gap can shift its slot past
    # midnight; the days after cover a repeated hour and a skipped day (Pacific/Apia,
    # 2011-12-30, whose slot is the next day's).
    for days in (-1, 0, 1, 2, 3):
        try:
            day = local_day + timedelta(days=days)
        except OverflowError:
            continue
        slot = _wall_to_instant(day, wall, zone)
        if slot is not None and slot >= base:
            return slot
    raise InvalidInput("instant_out_of_range", "no daily slot within the datetime range")


def _wall_to_instant(day: date, wall: time, zone: tzinfo) -> datetime | None:
    # fold=0: a repeated wall time is its earlier instant, a missing one (clocks go forward)
    # is read with the offset before the gap, which shifts it forward by the gap's length.
    try:
        return datetime.combine(day, wall, tzinfo=zone).astimezone(UTC)
    except OverflowError:
        return None


def email_after_for(
    schedule: EmailSchedule,
    now: datetime,
    *,
    person: str,
    digest: bool,
    time_zone: str | None = None,
    site_time_zone: str | None = None,
    delay: timedelta = DEFAULT_EMAIL_DELAY,
) -> datetime:
    """Return when an entry's email falls due (rule E2); the one place this is computed.

    Args:
        schedule: the person's schedule with its daily hour.
        now: the instant of the event (or of the schedule change, E3).
        person: the person's id, which gives their offset within the hour (`slot_offset`).
        digest: the category's ``digest`` flag; a category that may not wait for a digest
            (``digest: no``) is always immediate.
        time_zone: the person's IANA zone; ``site_time_zone``: the site's. A daily slot is
            in the first of them that loads, else in UTC (`mail_zone`).
        delay: the instance's ``email_delay`` (default 180 s).

    Returns:
        An aware instant in UTC. ``immediate``: ``now + delay``. ``hourly``: the first whole
        second at or after ``now + delay`` whose UTC minute and second are the person's
        offset. ``daily``: the first instant at or after ``now + delay`` at which the local
        time is ``daily_hour:00`` plus the offset; a local time in a gap is shifted forward by
        the gap, a repeated one is its earlier instant (the second is never a slot).

    Raises:
        NaiveDatetime: ``now`` has no offset (G2).
        UsageError: arguments of the wrong type.
        InvalidInput: a negative delay (``invalid_duration``), a slot beyond the datetime
            range (``instant_out_of_range``).

    Example:
        >>> from datetime import datetime, UTC
        >>> email_after_for(EmailSchedule(schedule="daily", daily_hour=9),
        ...                 datetime(2026, 11, 30, 10, tzinfo=UTC), person="ana", digest=True,
        ...                 time_zone="Asia/Tokyo")
        datetime.datetime(2026, 12, 1, 0, 56, 58, tzinfo=datetime.timezone.utc)
    """
    require_instant(now, "now")
    if not isinstance(schedule, EmailSchedule):
        raise UsageError("invalid_type", "schedule must be an EmailSchedule")
    if not isinstance(digest, bool):
        raise UsageError("invalid_type", "digest must be a bool (the category's digest flag)")
    if not isinstance(delay, timedelta):
        raise UsageError("invalid_type", "delay must be a timedelta")
    if delay < timedelta(0):
        raise InvalidInput("invalid_duration", f"the email delay is negative: {delay}")
    if not isinstance(person, str):
        raise UsageError("invalid_type", f"person must be a string, not {type(person).__name__}")
    try:
        base = now.astimezone(UTC) + delay
    except OverflowError:
        raise InvalidInput(
            "instant_out_of_range", "now + delay is beyond the datetime range"
        ) from None
    if not digest or schedule.schedule is Schedule.IMMEDIATE:
        return base
    offset = _offset(person)
    try:
        if schedule.schedule is Schedule.HOURLY:
            return _next_hourly(base, offset)
        assert schedule.daily_hour is not None  # EmailSchedule refuses daily without an hour
        zone = mail_zone(time_zone, site_time_zone)
        return _next_daily(base, schedule.daily_hour, offset, zone)
    except OverflowError:
        raise InvalidInput(
            "instant_out_of_range", "the slot is beyond the datetime range"
        ) from None


@attrs.frozen(kw_only=True)
class QueuedEmail:
    """One inbox entry as rescheduling sees it (rule E3).

    ``email`` is the entry's email state (``none``, ``pending``, ``sending``, ``sent``,
    ``failed``, ``skipped``); ``site_time_zone`` is the zone of the entry's site, the fallback
    of a person without a loadable zone.
    """

    entry: str
    category: str
    email: str
    email_after: datetime | None = attrs.field(default=None)
    site_time_zone: str | None = None

    @email_after.validator
    def _aware(self, _attribute: object, value: datetime | None) -> None:
        if value is not None:
            require_instant(value, "email_after")


def reschedule(
    entries: Iterable[QueuedEmail],
    *,
    person: str,
    old: EmailSchedule,
    new: EmailSchedule,
    old_time_zone: str | None,
    new_time_zone: str | None,
    now: datetime,
    digest_categories: Set[str],
    delay: timedelta = DEFAULT_EMAIL_DELAY,
) -> dict[str, datetime]:
    """Return the new ``email_after`` of a person's entries after a schedule change (E3).

    A change is a different schedule, or, for a person who is ``daily`` after the change, a
    different daily hour or zone; an update that repeats the current values changes nothing.
    On a change, every ``pending`` entry of a category in ``digest_categories`` gets
    `email_after_for` from ``now`` (the change's time) under the new values; entries of other
    categories or in other states keep theirs.

    Returns:
        Entry id -> new ``email_after``, only for entries whose due time moves (the rows to
        write); empty when nothing changes.
    """
    require_instant(now, "now")
    changed = old.schedule is not new.schedule or (
        new.schedule is Schedule.DAILY
        and (old.daily_hour != new.daily_hour or old_time_zone != new_time_zone)
    )
    if not changed:
        return {}
    moved: dict[str, datetime] = {}
    for queued in entries:
        if queued.email != "pending" or queued.category not in digest_categories:
            continue
        due = email_after_for(
            new,
            now,
            person=person,
            digest=True,
            time_zone=new_time_zone,
            site_time_zone=queued.site_time_zone,
            delay=delay,
        )
        if due != queued.email_after:
            moved[queued.entry] = due
    return moved
