"""Delivery's errors (R1-R3): each names its code, says what is wrong and points at the
member at fault (issue 41: the messages are what a host shows and logs)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from notify_core.hints.delivery import (
    Notification,
    RegistrationState,
    SendResult,
    apply_result,
    retry_at,
    retry_delay,
)
from notify_core.values.errors import (
    InvalidDelivery,
    InvalidInput,
    InvalidKind,
    NaiveDatetime,
    UsageError,
)

_T = datetime(2026, 10, 23, 12, tzinfo=UTC)
_SECOND = timedelta(seconds=1)


@pytest.mark.parametrize(
    ("make", "kind", "code", "message", "pointer"),
    [
        (
            lambda: RegistrationState(created_at=datetime(2026, 10, 23)),
            NaiveDatetime,
            "naive_datetime",
            "created_at is a naive datetime: give it a time zone",
            "/state/created_at",
        ),
        (
            lambda: RegistrationState(created_at=_T, failure_count=-1),
            InvalidDelivery,
            "invalid_failure_count",
            "failure_count must be an integer >= 0, not -1",
            "/state/failure_count",
        ),
        (
            lambda: RegistrationState(created_at=_T, disabled_reason="gone"),
            InvalidDelivery,
            "invalid_disable_reason",
            "unknown disable reason: 'gone'",
            "/state/disabled_reason",
        ),
        (
            lambda: RegistrationState(created_at=_T, disabled_at=_T),
            InvalidDelivery,
            "invalid_disabled_state",
            "disabled_at and disabled_reason go together",
            "/state/disabled_reason",
        ),
        (
            lambda: RegistrationState(created_at=_T, disabled_reason="token_invalid"),
            InvalidDelivery,
            "invalid_disabled_state",
            "disabled_at and disabled_reason go together",
            "/state/disabled_at",
        ),
        (
            lambda: SendResult(result_class="maybe"),
            InvalidDelivery,
            "unknown_result_class",
            "unknown result class: 'maybe'",
            "/result/class",
        ),
        (
            lambda: SendResult(result_class="disable"),
            InvalidDelivery,
            "missing_disable_reason",
            "a disable result needs a reason",
            "/result/disable_reason",
        ),
        (
            lambda: SendResult(result_class="accepted", retry_after=-_SECOND),
            InvalidDelivery,
            "invalid_duration",
            f"a duration must be a non-negative timedelta: {-_SECOND!r}",
            "/result/retry_after_s",
        ),
        (
            lambda: SendResult(result_class="disable", disable_reason="gone"),
            InvalidDelivery,
            "invalid_disable_reason",
            "unknown disable reason: 'gone'",
            "/result/disable_reason",
        ),
        (
            lambda: SendResult(result_class="accepted", invalid_since=datetime(2026, 10, 23)),
            NaiveDatetime,
            "naive_datetime",
            "invalid_since is a naive datetime: give it a time zone",
            "/result/invalid_since",
        ),
        (
            lambda: retry_at(_T, _T, _SECOND, -_SECOND),
            InvalidDelivery,
            "invalid_duration",
            f"a duration must be a non-negative timedelta: {-_SECOND!r}",
            "/max_age_s",
        ),
        (
            lambda: retry_at(_T, datetime(2026, 10, 23), _SECOND, _SECOND),
            NaiveDatetime,
            "naive_datetime",
            "now is a naive datetime: give it a time zone",
            "/now",
        ),
        (
            lambda: retry_delay(0, _SECOND, _SECOND, timedelta(0), 1.0),
            InvalidDelivery,
            "invalid_attempt",
            "attempt must be an integer >= 1, not 0",
            "/attempt",
        ),
        (
            lambda: retry_delay(1, _SECOND, _SECOND, timedelta(0), 2.0),
            InvalidDelivery,
            "invalid_jitter",
            "jitter must be a number in [0.5, 1], not 2.0",
            "/jitter",
        ),
        (
            lambda: retry_delay(1, 2 * _SECOND, _SECOND, timedelta(0), 1.0),
            InvalidDelivery,
            "invalid_duration",
            "cap 0:00:01 is below base 0:00:02",
            "/cap_s",
        ),
        (
            lambda: Notification(id=7, kind="sync", badge=0),
            UsageError,
            "invalid_type",
            "an ID must be a string, not 7",
            "/id",
        ),
        (
            lambda: Notification(id="n", kind="sync", badge=0, quiet=1),
            UsageError,
            "invalid_type",
            "quiet must be a boolean: 1",
            "/quiet",
        ),
        (
            lambda: Notification(id="n", kind="sync", badge=True),
            UsageError,
            "invalid_type",
            "badge must be an integer: True",
            "/badge",
        ),
        (
            lambda: Notification(id="n", kind="sync", badge=-1),
            InvalidDelivery,
            "invalid_count",
            "badge must be >= 0, not -1",
            "/badge",
        ),
        (
            lambda: Notification(id="n", kind="sync", badge=0, cleared="t-1"),
            UsageError,
            "invalid_type",
            "cleared must be a sequence of IDs: 't-1'",
            "/cleared",
        ),
        (
            lambda: Notification(id="n", kind="message", badge=0),
            InvalidDelivery,
            "missing_thread",
            "a message hint needs a thread",
            "/thread",
        ),
        (
            lambda: Notification(id="n", kind="security", badge=0, message="m"),
            InvalidDelivery,
            "invalid_notification",
            "a security push has no thread",
            "/message",
        ),
        (
            lambda: Notification(id="n", kind="sync", badge=0, count=2),
            InvalidDelivery,
            "invalid_notification",
            "a badge sync carries no count",
            "/count",
        ),
        (
            lambda: Notification(id="n", kind="admin", badge=0, cleared=["t-1"]),
            InvalidDelivery,
            "invalid_notification",
            "only a badge sync carries cleared threads",
            "/cleared",
        ),
    ],
)
def test_r1_r3_errors_carry_code_message_and_pointer(
    make: object, kind: type[Exception], code: str, message: str, pointer: str | None
) -> None:
    with pytest.raises(kind) as err:
        make()  # type: ignore[operator]
    assert (err.value.code, err.value.message, err.value.pointer) == (code, message, pointer)  # type: ignore[attr-defined]


_LATE = datetime.max.replace(tzinfo=timezone(timedelta(hours=-1)))


@pytest.mark.parametrize(
    ("make", "kind", "code", "message", "pointer"),
    [
        (
            lambda: RegistrationState(created_at=_LATE),
            InvalidInput,
            "invalid_instant",
            f"instant out of range: {_LATE!r}",
            "/state/created_at",
        ),
        (
            lambda: RegistrationState(created_at=_T, disabled_at=_T, disabled_reason=["logout"]),
            InvalidDelivery,
            "invalid_disable_reason",
            "unknown disable reason: ['logout']",
            "/state/disabled_reason",
        ),
        (
            lambda: SendResult(result_class=["accepted"]),
            InvalidDelivery,
            "unknown_result_class",
            "unknown result class: ['accepted']",
            "/result/class",
        ),
        (
            lambda: SendResult(result_class="disable", disable_reason="logout"),
            InvalidDelivery,
            "invalid_disable_reason",
            "a provider cannot disable with reason 'logout'",
            "/result/disable_reason",
        ),
        (
            lambda: apply_result(
                RegistrationState(created_at=_T), SendResult(result_class="accepted"), _T, 0
            ),
            InvalidDelivery,
            "invalid_max_failures",
            "max_failures must be an integer >= 1, not 0",
            "/max_failures",
        ),
        (
            lambda: Notification(id="n", kind="nope", badge=0),
            InvalidKind,
            "unknown_kind",
            "unknown kind: 'nope'",
            "/kind",
        ),
    ],
)
def test_r1_r3_more_errors_carry_code_message_and_pointer(
    make: object, kind: type[Exception], code: str, message: str, pointer: str | None
) -> None:
    with pytest.raises(kind) as err:
        make()  # type: ignore[operator]
    assert (err.value.code, err.value.message, err.value.pointer) == (code, message, pointer)  # type: ignore[attr-defined]
