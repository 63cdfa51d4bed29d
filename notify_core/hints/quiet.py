"""Quiet hours with IANA time zones (rules Q1-Q7).

A rule covers an instant by the local date and wall time of that instant in the rule's zone;
the weekday that counts is the day the window started on (Q4). ``quiet_until`` finds the exact
first uncovered instant by stepping from one possible change to the next: coverage can only
change where a zone's wall clock crosses a rule boundary or local midnight, or where the zone's
offset changes (Q6).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, time, timedelta, timezone, tzinfo
from typing import Final, Literal
from zoneinfo import ZoneInfo

import attrs

from notify_core.values.errors import InvalidRule
from notify_core.values.instants import require_instant
from notify_core.values.zones import load_zone, validate_time_zone, zone_or_utc

__all__ = [
    "ALWAYS",
    "QuietRule",
    "in_quiet_hours",
    "parse_local_time",
    "quiet_until",
    "rule_from_json",
    "rule_to_json",
    "rule_unchanged",
]

#: The answer of `quiet_until` when no uncovered instant exists within `HORIZON`.
ALWAYS: Final = "always"
#: How far `quiet_until` looks ahead (Q6).
HORIZON: Final = timedelta(days=400)

_LOCAL_TIME = re.compile(r"([01]\d|2[0-3]):([0-5]\d)")


def parse_local_time(text: object, pointer: str = "") -> time:
    """Parse a local wall time written exactly ``HH:MM`` (Q2).

    Raises:
        InvalidRule: anything else, ``24:00``, ``7:00``, ``07:60`` and ``07:00:00`` included
            (code ``invalid_local_time``).

    Example:
        >>> parse_local_time("07:30")
        datetime.time(7, 30)
    """
    m = _LOCAL_TIME.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise InvalidRule("invalid_local_time", f"not a local time HH:MM: {text!r}", pointer)
    return time(int(m[1]), int(m[2]))


def _weekdays(value: object) -> int:
    if type(value) is not int or not 1 <= value <= 127:
        raise InvalidRule(
            "invalid_weekdays", f"weekdays must be an integer 1..127, not {value!r}", "/weekdays"
        )
    return value


def _local_time(value: object, pointer: str) -> time:
    if isinstance(value, time):
        if value.second or value.microsecond or value.tzinfo is not None:
            raise InvalidRule("invalid_local_time", f"not a whole local minute: {value!r}", pointer)
        return value
    return parse_local_time(value, pointer)


def _start_local(value: object) -> time:
    return _local_time(value, "/start_local")


def _end_local(value: object) -> time:
    return _local_time(value, "/end_local")


def _optional_zone(value: object) -> str | None:
    return None if value is None else validate_time_zone(value)


def _enabled(value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidRule("invalid_enabled", f"enabled must be a boolean: {value!r}", "/enabled")
    return value


@attrs.frozen(kw_only=True)
class QuietRule:
    """One quiet-hours rule (Q1), validated on construction in the order of Q3.

    Args:
        weekdays: bit mask of the days a window may start on, bit 0 = Monday ... bit 6 = Sunday.
        start_local: local wall time the window starts, ``"HH:MM"`` or a `datetime.time`.
        end_local: local wall time it ends; before ``start_local`` it crosses midnight, equal
            to it the window lasts a whole day.
        time_zone: IANA zone name; absent means the person's zone.
        enabled: a disabled rule never covers.

    Raises:
        InvalidRule: with code ``invalid_weekdays``, ``invalid_local_time``,
            ``unknown_time_zone`` or ``invalid_enabled``, and the pointer of the field.

    Example:
        >>> rule = QuietRule(weekdays=0b0010000, start_local="22:00", end_local="07:00",
        ...                  time_zone="Europe/Berlin")
        >>> rule.start_local
        datetime.time(22, 0)
    """

    weekdays: int = attrs.field(converter=_weekdays)
    start_local: time = attrs.field(converter=_start_local)
    end_local: time = attrs.field(converter=_end_local)
    time_zone: str | None = attrs.field(default=None, converter=_optional_zone)
    enabled: bool = attrs.field(default=True, converter=_enabled)
    # Derived once so that evaluation is arithmetic only.
    _start: int = attrs.field(init=False, eq=False, repr=False)
    _end: int = attrs.field(init=False, eq=False, repr=False)
    _zone: tzinfo | None = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_start", self.start_local.hour * 60 + self.start_local.minute)
        object.__setattr__(self, "_end", self.end_local.hour * 60 + self.end_local.minute)
        zone = None if self.time_zone is None else load_zone(self.time_zone)
        object.__setattr__(self, "_zone", zone)


def rule_unchanged(a: QuietRule, b: QuietRule) -> bool:
    """Tell whether two rules are the same in all five fields (Q7)."""
    return a == b


def rule_from_json(obj: Mapping[str, object]) -> QuietRule:
    """Build a rule from its JSON object (formats.md ``quiet_rules`` members).

    Unknown members such as ``id`` and ``version`` are ignored; ``null`` is refused.

    Raises:
        InvalidRule: a missing or malformed member, with its pointer.
    """
    if not isinstance(obj, Mapping):
        raise InvalidRule("invalid_type", "a rule must be a JSON object")
    for name in ("weekdays", "start_local", "end_local", "enabled"):
        if name not in obj:
            raise InvalidRule("missing_member", f"the rule has no {name!r}", f"/{name}")
    if "time_zone" in obj and obj["time_zone"] is None:
        raise InvalidRule("null_value", "time_zone is null: omit it instead", "/time_zone")
    return QuietRule(
        weekdays=obj["weekdays"],
        start_local=obj["start_local"],
        end_local=obj["end_local"],
        time_zone=obj.get("time_zone"),
        enabled=obj["enabled"],
    )


def rule_to_json(rule: QuietRule) -> dict[str, object]:
    """Return the JSON object of a rule (no ``null``: an absent zone is omitted)."""
    out: dict[str, object] = {
        "weekdays": rule.weekdays,
        "start_local": rule.start_local.strftime("%H:%M"),
        "end_local": rule.end_local.strftime("%H:%M"),
    }
    if rule.time_zone is not None:
        out["time_zone"] = rule.time_zone
    out["enabled"] = rule.enabled
    return out


LocalCache = dict[tzinfo, tuple[int, int]]
# Zone types whose utcoffset() is never None: an instant in one of them is aware for sure.
_PLAIN_ZONES: Final = (timezone, ZoneInfo)


def covered(
    rules: Iterable[QuietRule], now: datetime, user_zone: tzinfo, cache: LocalCache | None = None
) -> bool:
    """Tell whether any rule covers ``now``; the fast path behind `in_quiet_hours`.

    Args:
        rules: validated rules.
        now: an aware instant (not checked here).
        user_zone: the zone of rules without one.
        cache: local (weekday, minute) per zone at ``now``; pass one dict for many people
            judged at the same instant so that each zone is converted once.
    """
    # Q4 inlined: this runs once per recipient of every fan-out. decide._decide_leveled has a
    # copy of this loop (a call per recipient cost a tenth of decide_all); change both.
    last: tzinfo | None = None
    weekday = minute = 0
    for rule in rules:
        if not rule.enabled:
            continue
        zone = rule._zone or user_zone
        if zone is not last:
            local = None if cache is None else cache.get(zone)
            if local is None:
                wall = now.astimezone(zone)
                local = (wall.weekday(), wall.hour * 60 + wall.minute)
                if cache is not None:
                    cache[zone] = local
            weekday, minute = local
            last = zone
        start, end, days = rule._start, rule._end, rule.weekdays
        if start < end:
            if days >> weekday & 1 and start <= minute < end:
                return True
        elif (days >> weekday & 1 and minute >= start) or (
            days >> (weekday - 1) % 7 & 1 and minute < end
        ):
            return True
    return False


def in_quiet_hours(rules: Sequence[QuietRule], now: datetime, user_zone: str | None) -> bool:
    """Tell whether any rule covers ``now`` (Q5).

    Args:
        rules: the person's rules (disabled ones never cover).
        now: the instant to judge.
        user_zone: the person's IANA zone for rules without one; absent or unloadable is UTC.

    Raises:
        NaiveDatetime: ``now`` has no time zone.

    Example:
        >>> from datetime import datetime, UTC
        >>> rule = QuietRule(weekdays=16, start_local="22:00", end_local="07:00",
        ...                  time_zone="Europe/Berlin")
        >>> in_quiet_hours([rule], datetime(2026, 10, 23, 21, 30, tzinfo=UTC), None)
        True
    """
    if type(now) is not datetime or type(now.tzinfo) not in _PLAIN_ZONES:
        require_instant(now, "now")  # the slow, complete check, when the fast one is unsure
    return covered(rules, now, UTC if user_zone is None else zone_or_utc(user_zone))


def quiet_until(
    rules: Sequence[QuietRule], now: datetime, user_zone: str | None
) -> datetime | Literal["always"] | None:
    """Return the first instant after ``now`` at which no rule covers (Q6).

    Args:
        rules: the person's rules.
        now: the instant to start from.
        user_zone: as in `in_quiet_hours`.

    Returns:
        ``None`` when ``now`` is not quiet; the exact first uncovered instant (UTC) when one
        exists within 400 days; else `ALWAYS`.

    Raises:
        NaiveDatetime: ``now`` has no time zone.

    Example:
        >>> from datetime import datetime, UTC
        >>> rule = QuietRule(weekdays=16, start_local="22:00", end_local="07:00",
        ...                  time_zone="Europe/Berlin")
        >>> quiet_until([rule], datetime(2026, 10, 23, 21, 30, tzinfo=UTC), None)
        datetime.datetime(2026, 10, 24, 5, 0, tzinfo=datetime.timezone.utc)
    """
    require_instant(now, "now")
    user = zone_or_utc(user_zone)
    active = [rule for rule in rules if rule.enabled]
    now = now.astimezone(UTC)
    if not covered(active, now, user):
        return None
    boundaries: dict[tzinfo, list[int]] = {}
    for rule in active:
        marks = boundaries.setdefault(rule._zone or user, [0])
        marks.extend((rule._start, rule._end))
    zones = [(zone, sorted(set(marks))) for zone, marks in boundaries.items()]
    horizon = now + HORIZON
    t = now
    while True:
        t = min(_next_change(zone, marks, t) for zone, marks in zones)
        if t > horizon:
            return ALWAYS
        if not covered(active, t, user):
            return t


def _next_change(zone: tzinfo, marks: list[int], t: datetime) -> datetime:
    """Return the next instant after ``t`` where coverage in ``zone`` may change.

    That is the next local boundary minute (rule starts and ends, local midnight) reached at
    the current offset, or the zone's next offset change if one comes first.
    """
    local = t.astimezone(zone)
    offset = local.utcoffset()
    assert offset is not None
    second_of_day = local.hour * 3600 + local.minute * 60 + local.second + local.microsecond / 1e6
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=None)
    after = next((m for m in marks if m * 60 > second_of_day), None)
    wall = midnight + timedelta(minutes=after) if after is not None else midnight + timedelta(1)
    candidate = (wall - offset).replace(tzinfo=UTC)
    if candidate.astimezone(zone).utcoffset() == offset:
        return candidate
    # An offset change lies in (t, candidate]: find its exact second by bisection.
    lo, hi = math.floor(t.timestamp()), int(candidate.timestamp())
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, zone).utcoffset() == offset:
            lo = mid
        else:
            hi = mid
    return datetime.fromtimestamp(hi, UTC)
