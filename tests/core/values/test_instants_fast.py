"""`parse_instant`'s fast path for the canonical form answers as the general parser does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.values import instants
from notify_core.values.errors import NotifyError
from notify_core.values.instants import _parse_instant, format_instant, parse_instant


def _either(text: object) -> tuple[str, object]:
    """What a parser answers: the instant with its zone, or the error's code and message."""
    try:
        value = parse_instant(text, "/at")
    except NotifyError as error:
        fast: tuple[str, object] = ("error", (error.code, error.message, error.pointer))
    else:
        fast = ("ok", (value, value.tzinfo))
    try:
        value = _parse_instant(text, "/at")
    except NotifyError as error:
        slow: tuple[str, object] = ("error", (error.code, error.message, error.pointer))
    else:
        slow = ("ok", (value, value.tzinfo))
    assert fast == slow, text
    return fast


@pytest.mark.parametrize(
    "text",
    [
        "2026-10-19T06:00:00Z",
        "2026-10-19T06:00:00.1Z",
        "2026-10-19T06:00:00.123456Z",
        "2026-10-19T06:00:00.1234567Z",  # seven digits: truncated (general path)
        "2026-10-19t06:00:00z",
        "2026-10-19 06:00:00Z",
        "2026-10-19T06:00:00+02:00",
        "2026-10-19T06:00:00",
        "2026-10-19T24:00:00Z",
        "2026-10-19T23:60:00Z",
        "2026-10-19T23:59:60Z",
        "2026-02-29T00:00:00Z",
        "2024-02-29T00:00:00Z",
        "0099-12-31T23:59:59Z",
        "0100-01-01T00:00:00Z",
        "9899-12-31T23:59:59.999999Z",
        "9900-01-01T00:00:00Z",
        "2026-1\uff10-19T06:00:00Z",  # a full-width digit
        "2026-10-19T06:00:00.²Z",
        "2026-10-19T06:00:00.Z",
        "2026-10-19T06:00:00,5Z",
        "20261019T060000Z",
        "2026-10-19T06:00:00.12 Z",
        "",
        17,
    ],
)
def test_fast_path_answers_as_the_general_parser(text: object) -> None:
    _either(text)


def test_canonical_instants_take_the_fast_path_and_round_trip() -> None:
    value = parse_instant("2026-10-19T06:00:00.25Z")
    assert value == datetime(2026, 10, 19, 6, 0, 0, 250000, UTC)
    assert value.tzinfo is UTC
    assert format_instant(value) == "2026-10-19T06:00:00.25Z"


# From 1000 on: strftime writes years below it with fewer than four digits.
@given(st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9899, 12, 31)))
def test_any_formatted_instant_parses_alike(moment: datetime) -> None:
    text = format_instant(moment.replace(tzinfo=UTC))
    kind, _ = _either(text)
    assert kind == "ok"


@given(st.text(alphabet="0123456789-:T.Z+ tz²", min_size=18, max_size=28))
def test_near_canonical_text_parses_alike(text: str) -> None:
    _either(text)


def _strftime_format(value: datetime) -> str:
    """`format_instant`'s general path, written out: strftime after a conversion to UTC."""
    utc = value.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += "." + f"{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


@given(
    st.datetimes(min_value=datetime(100, 1, 2), max_value=datetime(9899, 12, 30)),
    st.sampled_from(
        [UTC, timezone(timedelta(0)), timezone(timedelta(hours=2)), timezone(-timedelta(hours=5))]
    ),
)
def test_format_fast_path_writes_what_strftime_writes(moment: datetime, zone: tzinfo) -> None:
    value = moment.replace(tzinfo=zone)
    assert format_instant(value) == _strftime_format(value)


@pytest.mark.parametrize(
    "value",
    [
        datetime(100, 1, 1, tzinfo=UTC),
        datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1000, 1, 1, tzinfo=UTC),
        datetime(2026, 10, 19, 6, 0, 0, 10, tzinfo=UTC),
        datetime(2026, 10, 19, 6, 0, 0, 500000, tzinfo=UTC),
    ],
)
def test_format_fast_path_at_its_edges(value: datetime) -> None:
    assert format_instant(value) == _strftime_format(value)


@given(
    st.datetimes(min_value=datetime(100, 1, 2), max_value=datetime(9899, 12, 30)),
    st.integers(0, 999),
)
def test_whole_milliseconds_are_written_as_strftime_writes(moment: datetime, millis: int) -> None:
    # The log's instants: a fraction of whole milliseconds comes from a table.
    value = moment.replace(microsecond=millis * 1000, tzinfo=UTC)
    assert format_instant(value) == _strftime_format(value)


def test_the_days_kept_are_bounded() -> None:
    start = datetime(2000, 1, 1, 12, 30, 5, tzinfo=UTC)
    for offset in range(instants._DAYS_KEPT + 10):
        value = start + timedelta(days=offset)
        assert format_instant(value) == _strftime_format(value)
        assert len(instants._days) <= instants._DAYS_KEPT
