"""Instants and durations: the checks of rule G2 and the RFC 3339 text of the formats."""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Final

from notify_core.values.errors import InvalidInput, NaiveDatetime, UsageError

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_DURATION",
    "format_instant",
    "parse_instant",
    "require_instant",
    "seconds",
]

#: The range of instants read from input (an event's ``occurred_at``, a table's ``now``, any
#: other instant member), lower bound included, upper excluded. Windows, delays, quiet-hours
#: horizons and zone conversions reach days or years past an instant; with this headroom they
#: stay inside what a ``datetime`` holds (years 1 to 9999), so no input can overflow them.
EARLIEST: Final = datetime(100, 1, 1, tzinfo=UTC)
LATEST: Final = datetime(9900, 1, 1, tzinfo=UTC)
#: The longest duration read from input (a ``*_s`` member, a policy value): ten years.
MAX_DURATION: Final = timedelta(days=3653)

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))?"
)


def require_instant(value: object, name: str = "instant") -> datetime:
    """Return ``value`` if it is a timezone-aware datetime, else raise.

    Args:
        value: the candidate instant.
        name: the argument's name, used in the message.

    Raises:
        NaiveDatetime: ``value`` is a datetime without offset (rule G2).
        UsageError: ``value`` is not a datetime at all.
    """
    if not isinstance(value, datetime):
        raise UsageError("invalid_type", f"{name} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetime(message=f"{name} is a naive datetime: give it a time zone")
    return value


def parse_instant(text: object, pointer: str = "") -> datetime:
    """Parse an RFC 3339 instant with any offset; digits past microseconds are truncated.

    Args:
        text: the JSON value.
        pointer: JSON pointer of the member, used in errors.

    Returns:
        An aware datetime in UTC.

    Raises:
        NaiveDatetime: the text has no offset (code ``naive_datetime``).
        InvalidInput: anything else that is not an RFC 3339 date-time (code ``invalid_instant``),
            or one outside [`EARLIEST`, `LATEST`) (code ``instant_out_of_range``).

    Example:
        >>> parse_instant("2026-10-23T23:30:00+02:00")
        datetime.datetime(2026, 10, 23, 21, 30, tzinfo=datetime.timezone.utc)
    """
    if type(text) is str and _CANONICAL(text) is not None:
        # Every instant the formats write (and most a log holds) is UTC with ``Z`` and up to
        # six digits of fraction: `datetime.fromisoformat` reads that form alike, 5x faster.
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            pass  # the general path below says what is wrong
        else:
            if EARLIEST <= parsed < LATEST:
                return parsed
    return _parse_instant(text, pointer)


#: Whether a text has the shape ``YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z`` in ASCII digits and an hour
#: that is not 24 (the other digits unchecked: `datetime.fromisoformat` refuses bad ones). One
#: compiled match: it runs once per line of a replay, where a chain of tests cost twice as much.
_CANONICAL: Final = re.compile(
    r"\d{4}-\d\d-\d\dT(?:[01]\d|2[0-3]):\d\d:\d\d(?:\.\d{1,6})?Z", re.ASCII
).fullmatch


def _parse_instant(text: object, pointer: str) -> datetime:
    """`parse_instant` for any form RFC 3339 allows (and the errors)."""
    if not isinstance(text, str):
        raise InvalidInput("invalid_instant", "an instant must be an RFC 3339 string", pointer)
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise InvalidInput("invalid_instant", f"not an RFC 3339 instant: {text!r}", pointer)
    year, month, day, hour, minute, second, frac, zulu, sign, oh, om = m.groups()
    if zulu is None and sign is None:
        raise NaiveDatetime(message=f"instant without offset: {text!r}", pointer=pointer)
    micro = int((frac or "0")[:6].ljust(6, "0"))
    try:
        tz = UTC
        if sign is not None:
            offset = timedelta(hours=int(oh), minutes=int(om))
            if offset >= timedelta(hours=24):
                raise ValueError("offset out of range")
            tz = timezone(-offset if sign == "-" else offset)
        parsed = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tz
        )
    except ValueError as exc:
        raise InvalidInput("invalid_instant", f"not a valid instant: {text!r}", pointer) from exc
    if not EARLIEST <= parsed < LATEST:  # compared as instants: no conversion can overflow
        raise InvalidInput(
            "instant_out_of_range",
            f"instant out of range: {text!r} (instants lie in the years 100 to 9899)",
            pointer,
        )
    return parsed.astimezone(UTC)


#: "00" to "59": an hour, minute or second as written.
_TWO_DIGITS: Final = tuple(f"{n:02d}" for n in range(60))
#: A fraction of whole milliseconds as written, trailing zeros dropped (the log's instants).
_MILLIS: Final = tuple(f".{n:03d}".rstrip("0") if n else "" for n in range(1000))
#: ``YYYY-MM-DDT`` by the day's ordinal, from the year 1000 on (before it: ``""``); a replay
#: meets a few hundred days, and the memory is emptied at `_DAYS_KEPT` days.
_days: dict[int, str] = {}
_DAYS_KEPT: Final = 4096


def _day_prefix(value: datetime) -> str:
    if len(_days) >= _DAYS_KEPT:
        _days.clear()
    # strftime writes a year before 1000 with fewer digits than isoformat: the slow path's.
    text = value.date().isoformat() + "T" if value.year >= 1000 else ""
    _days[value.toordinal()] = text
    return text


# Speed device (the day's text from a table 0.76 % and isoformat's path 1.10 % alone): the replay's
# line path, kept as one group: its 13 devices together are 12.2 % of the
# replay's instructions (cachegrind, 25,000-event synthetic log; docs/decisions.md 2026-12-06)
def format_instant(value: datetime) -> str:
    """Format an instant as the formats require: UTC, ``Z``, fraction only when non-zero.

    Example:
        >>> from datetime import datetime, UTC
        >>> format_instant(datetime(2026, 10, 23, 21, 30, 0, 250000, UTC))
        '2026-10-23T21:30:00.25Z'
    """
    if type(value) is datetime and value.tzinfo is UTC:
        # The usual instant (parsed or computed here: UTC already) from its parts: the day's
        # text kept, the rest from tables (isoformat costs three times as much, strftime
        # nine times: both go through a printf-like formatter).
        day = _days.get(value.toordinal())
        if day is None:
            day = _day_prefix(value)
        if day:
            micro = value.microsecond
            if not micro:
                fraction = ""
            elif micro % 1000:
                fraction = f".{micro:06d}".rstrip("0")
            else:
                fraction = _MILLIS[micro // 1000]
            two = _TWO_DIGITS
            return f"{day}{two[value.hour]}:{two[value.minute]}:{two[value.second]}{fraction}Z"
    utc = require_instant(value).astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += "." + f"{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


def seconds(value: object, pointer: str = "") -> timedelta:
    """Turn a JSON number of seconds (a ``*_s`` member) into a non-negative duration.

    Raises:
        InvalidInput: not a number, a boolean, negative, not finite or longer than
            `MAX_DURATION` (code ``invalid_duration``).
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput("invalid_duration", "a duration must be a number of seconds", pointer)
    if not (0 <= value <= _MAX_SECONDS):  # also refuses NaN
        raise InvalidInput(
            "invalid_duration",
            f"invalid duration: {value!r} (a number of seconds from 0 to {_MAX_SECONDS:,})",
            pointer,
        )
    return timedelta(seconds=value)


_MAX_SECONDS: Final = int(MAX_DURATION.total_seconds())


#: `format_instant` with a memory of recent instants: the hints of one event, and the windows
#: and delayed pushes they open, share their instants, and the output writes each many times.
#: Measured (cachegrind, `notify replay` of the 25,000-event synthetic log): the replay's lines
#: written with `format_instant` itself run 10.7 % more instructions (5,972 M -> 6,612 M).
format_instant_cached = functools.lru_cache(maxsize=4096)(format_instant)
