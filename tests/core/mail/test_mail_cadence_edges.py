"""Cadence at its edges (E2, E3; issue 41): every error's code, message and pointer, the
delay reschedule passes on, and the first and last dates of the datetime range."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from notify_core.mail import (
    EmailSchedule,
    QueuedEmail,
    email_after_for,
    mail_zone,
    reschedule,
    slot_offset,
)
from notify_core.values.errors import InvalidInput, InvalidSchedule, NaiveDatetime, UsageError
from tests.core.mail.test_mail_cadence import (
    DAILY_9,
    DIGEST_KEYS,
    HOURLY,
    IMMEDIATE,
    at,
    daily,
    due,
)
from tests.strategies_mail import person_with_offset


def _after(**kw: object) -> datetime:
    fields: dict[str, object] = {
        "schedule": IMMEDIATE,
        "now": at("2026-11-30T10:00:00Z"),
        "person": "ana",
        "digest": True,
    } | kw
    return email_after_for(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "kind", "code", "message", "pointer"),
    [
        (
            lambda: EmailSchedule(schedule="weekly"),
            InvalidSchedule,
            "unknown_schedule",
            "unknown email schedule 'weekly' (known: immediate, hourly, daily)",
            "/schedule",
        ),
        (
            lambda: EmailSchedule(schedule=3),
            InvalidSchedule,
            "unknown_schedule",
            "unknown email schedule 3 (known: immediate, hourly, daily)",
            "/schedule",
        ),
        (
            lambda: EmailSchedule(schedule="daily", daily_hour=24),
            InvalidSchedule,
            "invalid_daily_hour",
            "the daily hour must be an integer 0-23: 24",
            "/daily_hour",
        ),
        (
            lambda: EmailSchedule(schedule="daily"),
            InvalidSchedule,
            "missing_daily_hour",
            "a daily email schedule needs a daily hour",
            "/daily_hour",
        ),
        (
            lambda: slot_offset(7),
            UsageError,
            "invalid_type",
            "person must be a string, not int",
            None,
        ),
        (
            lambda: mail_zone(7),
            UsageError,
            "invalid_type",
            "a time zone must be a string or None",
            "/time_zone",
        ),
        (
            lambda: mail_zone(None, 7),
            UsageError,
            "invalid_type",
            "a time zone must be a string or None",
            "/site_time_zone",
        ),
        (
            lambda: _after(schedule="daily"),
            UsageError,
            "invalid_type",
            "schedule must be an EmailSchedule",
            None,
        ),
        (
            lambda: _after(digest=1),
            UsageError,
            "invalid_type",
            "digest must be a bool (the category's digest flag)",
            None,
        ),
        (
            lambda: _after(delay=180),
            UsageError,
            "invalid_type",
            "delay must be a timedelta",
            None,
        ),
        (
            lambda: _after(delay=timedelta(seconds=-1)),
            InvalidInput,
            "invalid_duration",
            "the email delay is negative: -1 day, 23:59:59",
            None,
        ),
        (
            lambda: _after(person=b"ana"),
            UsageError,
            "invalid_type",
            "person must be a string, not bytes",
            None,
        ),
        (
            lambda: _after(now=datetime.max.replace(tzinfo=UTC)),
            InvalidInput,
            "instant_out_of_range",
            "now + delay is beyond the datetime range",
            None,
        ),
        (
            lambda: _after(
                schedule=HOURLY,
                now=datetime.max.replace(tzinfo=UTC) - timedelta(minutes=5),
                delay=timedelta(0),
                person=person_with_offset(0),
            ),
            InvalidInput,
            "instant_out_of_range",
            "the slot is beyond the datetime range",
            None,
        ),
        (
            lambda: _after(now=datetime(2026, 11, 30, 10)),
            NaiveDatetime,
            "naive_datetime",
            "now is a naive datetime: give it a time zone",
            None,
        ),
        (
            lambda: QueuedEmail(
                entry="e", category="mention", email="pending", email_after=datetime(2026, 1, 1)
            ),
            NaiveDatetime,
            "naive_datetime",
            "email_after is a naive datetime: give it a time zone",
            None,
        ),
    ],
)
def test_e2_errors_carry_code_message_and_pointer(
    make: object, kind: type[Exception], code: str, message: str, pointer: str | None
) -> None:
    with pytest.raises(kind) as err:
        make()  # type: ignore[operator]
    assert (err.value.code, err.value.message, err.value.pointer) == (code, message, pointer)  # type: ignore[attr-defined]


def test_e3_the_delay_given_is_the_delay_used() -> None:
    entries = [QueuedEmail(entry="a", category="watched_page", email="pending")]
    moved = reschedule(
        entries,
        person="ana",
        old=DAILY_9,
        new=IMMEDIATE,
        old_time_zone=None,
        new_time_zone=None,
        now=at("2026-11-30T12:00:00Z"),
        digest_categories=DIGEST_KEYS,
        delay=timedelta(seconds=7),
    )
    assert moved == {"a": at("2026-11-30T12:00:07Z")}


def test_e3_reschedule_names_now() -> None:
    with pytest.raises(NaiveDatetime) as err:
        reschedule(
            [],
            person="ana",
            old=DAILY_9,
            new=IMMEDIATE,
            old_time_zone=None,
            new_time_zone=None,
            now=datetime(2026, 11, 30, 12),
            digest_categories=DIGEST_KEYS,
        )
    assert err.value.message == "now is a naive datetime: give it a time zone"


def test_e2_daily_slots_at_the_ends_of_the_datetime_range() -> None:
    # The day before the first date does not exist: the search goes on with the first day.
    first = person_with_offset(0)
    start = datetime(1, 1, 1, tzinfo=UTC)
    slot = email_after_for(daily(9), start, person=first, digest=True, time_zone="UTC")
    assert slot == datetime(1, 1, 1, 9, tzinfo=UTC)
    # After the last date's slot there is none left: an error that says so.
    with pytest.raises(InvalidInput) as err:
        due(daily(0), "9999-12-31T23:30:00Z", first, "UTC")
    assert (err.value.code, err.value.message) == (
        "instant_out_of_range",
        "no daily slot within the datetime range",
    )
