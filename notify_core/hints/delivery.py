"""Delivery results, retries and what a push carries (rules R1-R3).

A provider's answer to one push is sorted into a `ResultClass`. `apply_result` turns it into the
registration's next state, the metric outcome and what becomes of the hint, reading
`RESULT_TABLE` (R1). `retry_delay` and `retry_at` time a retry (R2). `Notification` is all a
push may carry: IDs, the kind, flags, a count and the badge, never text (R3).

Every value here is checked when it is built, so `apply_result` cannot meet a malformed result.
Error pointers name the members of the ``apply_result`` and ``retry_delay`` inputs of the
decision-table format (formats.md 1), e.g. ``/result/class`` or ``/base_s``. Instants are kept
in UTC, so comparisons never depend on a zone's wall clock.
"""

from __future__ import annotations

import enum
import numbers
from datetime import UTC, datetime, timedelta
from typing import Any, Final, NamedTuple

import attrs

from notify_core.values.errors import InvalidDelivery, InvalidInput, NotifyError, UsageError
from notify_core.values.instants import require_instant
from notify_core.values.kinds import THREAD_KINDS, Kind, parse_kind

__all__ = [
    "PROVIDER_DISABLE_REASONS",
    "RESULT_TABLE",
    "Action",
    "DisableReason",
    "Effect",
    "Notification",
    "Outcome",
    "RegistrationState",
    "ResultChange",
    "ResultClass",
    "ResultRule",
    "SendResult",
    "apply_result",
    "retry_at",
    "retry_delay",
]


class ResultClass(enum.StrEnum):
    """How a provider answered one push (R1)."""

    ACCEPTED = "accepted"
    DISABLE = "disable"
    RETRY = "retry"
    THROTTLED = "throttled"
    CONFIG_ERROR = "config_error"
    PROGRAM_ERROR = "program_error"


class Outcome(enum.StrEnum):
    """The outcome a send is counted under (R1)."""

    ACCEPTED = "accepted"
    REJECTED_TOKEN = "rejected_token"
    PROVIDER_ERROR = "provider_error"
    THROTTLED = "throttled"
    REJECTED_OTHER = "rejected_other"


class Action(enum.StrEnum):
    """What becomes of the hint after a result (R1)."""

    DONE = "done"
    RETRY = "retry"
    DROP = "drop"


class DisableReason(enum.StrEnum):
    """Why a registration was deactivated (its ``disabled_reason``)."""

    TOKEN_INVALID = "token_invalid"
    DEVICE_REVOKED = "device_revoked"
    LOGOUT = "logout"
    TOPIC_MISMATCH = "topic_mismatch"
    SENDER_MISMATCH = "sender_mismatch"
    REPEATED_FAILURES = "repeated_failures"


#: R1: the reasons a provider result of class ``disable`` may carry. ``device_revoked`` and
#: ``logout`` are set by the host, ``repeated_failures`` only by `apply_result` itself.
PROVIDER_DISABLE_REASONS: Final = frozenset(
    {DisableReason.TOKEN_INVALID, DisableReason.TOPIC_MISMATCH, DisableReason.SENDER_MISMATCH}
)


class Effect(enum.StrEnum):
    """What a result does to an active registration (R1)."""

    #: ``failure_count = 0``, ``last_success_at = now``.
    RECORD_SUCCESS = "record_success"
    #: ``disabled_at = now`` with the result's reason, unless the token was found invalid
    #: before the registration was created (``created_at > invalid_since``).
    DEACTIVATE = "deactivate"
    #: ``failure_count + 1``; reaching ``max_failures`` deactivates with ``repeated_failures``
    #: and turns the action into ``drop``.
    COUNT_FAILURE = "count_failure"
    #: Nothing changes.
    NONE = "none"


class ResultRule(NamedTuple):
    """One row of `RESULT_TABLE`."""

    effect: Effect
    outcome: Outcome
    action: Action


#: The table of R1: result class -> registration change, outcome, action.
RESULT_TABLE: Final[dict[ResultClass, ResultRule]] = {
    ResultClass.ACCEPTED: ResultRule(Effect.RECORD_SUCCESS, Outcome.ACCEPTED, Action.DONE),
    ResultClass.DISABLE: ResultRule(Effect.DEACTIVATE, Outcome.REJECTED_TOKEN, Action.DONE),
    ResultClass.RETRY: ResultRule(Effect.COUNT_FAILURE, Outcome.PROVIDER_ERROR, Action.RETRY),
    ResultClass.THROTTLED: ResultRule(Effect.NONE, Outcome.THROTTLED, Action.RETRY),
    ResultClass.CONFIG_ERROR: ResultRule(Effect.NONE, Outcome.REJECTED_OTHER, Action.DROP),
    ResultClass.PROGRAM_ERROR: ResultRule(Effect.NONE, Outcome.REJECTED_OTHER, Action.DROP),
}

_ZERO: Final = timedelta(0)
_MICROSECOND: Final = timedelta(microseconds=1)


def _instant(value: object, pointer: str) -> datetime:
    """Return ``value`` as a UTC instant; errors carry ``pointer`` (G2)."""
    try:
        return require_instant(value, pointer.rsplit("/", 1)[-1]).astimezone(UTC)
    except NotifyError as err:
        raise err.at(pointer) from None
    except OverflowError:
        raise InvalidInput("invalid_instant", f"instant out of range: {value!r}", pointer) from None


def _optional_instant(value: object, pointer: str) -> datetime | None:
    return None if value is None else _instant(value, pointer)


def _duration(value: object, pointer: str) -> timedelta:
    if not isinstance(value, timedelta) or value < _ZERO:
        raise InvalidDelivery(
            "invalid_duration", f"a duration must be a non-negative timedelta: {value!r}", pointer
        )
    return value


_REASONS: Final = {reason.value: reason for reason in DisableReason}
_CLASSES: Final = {cls.value: cls for cls in ResultClass}


def _reason(value: object, pointer: str) -> DisableReason | None:
    if value is None:
        return None
    reason = _REASONS.get(value) if isinstance(value, str) else None
    if reason is None:
        raise InvalidDelivery(
            "invalid_disable_reason", f"unknown disable reason: {value!r}", pointer
        )
    return reason


# Converters are named functions: the attrs plugin of mypy types no other kind.
def _created_at(value: object) -> datetime:
    return _instant(value, "/state/created_at")


def _last_success_at(value: object) -> datetime | None:
    return _optional_instant(value, "/state/last_success_at")


def _disabled_at(value: object) -> datetime | None:
    return _optional_instant(value, "/state/disabled_at")


def _disabled_reason(value: object) -> DisableReason | None:
    return _reason(value, "/state/disabled_reason")


def _result_class(value: object) -> ResultClass:
    cls = _CLASSES.get(value) if isinstance(value, str) else None
    if cls is None:
        raise InvalidDelivery(
            "unknown_result_class", f"unknown result class: {value!r}", "/result/class"
        )
    return cls


def _disable_reason(value: object) -> DisableReason | None:
    return _reason(value, "/result/disable_reason")


def _invalid_since(value: object) -> datetime | None:
    return _optional_instant(value, "/result/invalid_since")


def _retry_after(value: object) -> timedelta:
    return _duration(value, "/result/retry_after_s")


def _failure_count(_inst: object, _attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidDelivery(
            "invalid_failure_count",
            f"failure_count must be an integer >= 0, not {value!r}",
            "/state/failure_count",
        )


@attrs.frozen(kw_only=True)
class RegistrationState:
    """The columns of a push registration that delivery results change (R1).

    Args:
        failure_count: consecutive transient failures, an integer >= 0.
        created_at: when the registration was created.
        last_success_at: the last accepted push.
        disabled_at: when the registration was deactivated; absent while it is active.
        disabled_reason: why; present exactly when ``disabled_at`` is.

    Raises:
        InvalidDelivery: a negative or non-integer ``failure_count``
            (``invalid_failure_count``), an unknown reason (``invalid_disable_reason``), or
            only one of ``disabled_at`` and ``disabled_reason`` (``invalid_disabled_state``).
        NaiveDatetime: an instant without time zone.

    Example:
        >>> from datetime import datetime, UTC
        >>> RegistrationState(created_at=datetime(2026, 10, 1, tzinfo=UTC)).active
        True
    """

    failure_count: int = attrs.field(default=0, validator=_failure_count)
    created_at: datetime = attrs.field(converter=_created_at)
    last_success_at: datetime | None = attrs.field(default=None, converter=_last_success_at)
    disabled_at: datetime | None = attrs.field(default=None, converter=_disabled_at)
    disabled_reason: DisableReason | None = attrs.field(default=None, converter=_disabled_reason)

    def __attrs_post_init__(self) -> None:
        if (self.disabled_at is None) != (self.disabled_reason is None):
            missing = "disabled_reason" if self.disabled_reason is None else "disabled_at"
            raise InvalidDelivery(
                "invalid_disabled_state",
                "disabled_at and disabled_reason go together",
                f"/state/{missing}",
            )

    @property
    def active(self) -> bool:
        """Whether the registration may still receive pushes."""
        return self.disabled_at is None


@attrs.frozen(kw_only=True)
class SendResult:
    """A provider's answer to one push, sorted into a class (R1).

    Args:
        result_class: the class of the answer.
        disable_reason: for ``disable`` only, and required there: ``token_invalid``,
            ``topic_mismatch`` or ``sender_mismatch``. Other classes ignore it.
        invalid_since: for ``disable`` only: since when the provider knows the token is
            invalid (HTTP 410 with a timestamp). Other classes ignore it.
        retry_after: the provider's Retry-After, zero when it sent none.

    Raises:
        InvalidDelivery: an unknown class (``unknown_result_class``), a ``disable`` without
            reason (``missing_disable_reason``), an unknown reason or one a provider may not
            give (``invalid_disable_reason``), a negative ``retry_after``
            (``invalid_duration``).
        NaiveDatetime: ``invalid_since`` has no time zone.

    Example:
        >>> SendResult(result_class="disable", disable_reason="token_invalid").disable_reason
        <DisableReason.TOKEN_INVALID: 'token_invalid'>
    """

    result_class: ResultClass = attrs.field(converter=_result_class)
    disable_reason: DisableReason | None = attrs.field(default=None, converter=_disable_reason)
    invalid_since: datetime | None = attrs.field(default=None, converter=_invalid_since)
    retry_after: timedelta = attrs.field(default=_ZERO, converter=_retry_after)

    def __attrs_post_init__(self) -> None:
        if self.result_class is not ResultClass.DISABLE:
            return
        if self.disable_reason is None:
            raise InvalidDelivery(
                "missing_disable_reason",
                "a disable result needs a reason",
                "/result/disable_reason",
            )
        if self.disable_reason not in PROVIDER_DISABLE_REASONS:
            raise InvalidDelivery(
                "invalid_disable_reason",
                f"a provider cannot disable with reason {self.disable_reason.value!r}",
                "/result/disable_reason",
            )


class ResultChange(NamedTuple):
    """The answer of `apply_result`: ``(state, outcome, action)`` (R1)."""

    state: RegistrationState
    outcome: Outcome
    action: Action


def _check_max_failures(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidDelivery(
            "invalid_max_failures",
            f"max_failures must be an integer >= 1, not {value!r}",
            "/max_failures",
        )


def apply_result(
    state: RegistrationState, result: SendResult, now: datetime, max_failures: int
) -> ResultChange:
    """Apply one send result to a registration (R1).

    The change follows `RESULT_TABLE`. A registration that is already disabled is returned
    unchanged (the first reason stays), with the outcome of the class and the action ``done``
    for ``accepted`` and ``disable``, ``drop`` for the others: a disabled registration is
    never retried (docs/decisions.md).

    Args:
        state: the registration before the result.
        result: the provider's answer.
        now: the instant the result arrived.
        max_failures: consecutive transient failures that deactivate (an integer >= 1).

    Returns:
        The next state, the outcome and the action.

    Raises:
        InvalidDelivery: ``max_failures`` is not an integer >= 1 (``invalid_max_failures``).
        NaiveDatetime: ``now`` has no time zone.

    Example:
        >>> from datetime import datetime, UTC
        >>> state = RegistrationState(failure_count=4, created_at=datetime(2026, 10, 1, tzinfo=UTC))
        >>> change = apply_result(
        ...     state, SendResult(result_class="retry"), datetime(2026, 10, 23, tzinfo=UTC), 5
        ... )
        >>> change.state.disabled_reason, change.outcome, change.action
        (<DisableReason.REPEATED_FAILURES: 'repeated_failures'>, \
<Outcome.PROVIDER_ERROR: 'provider_error'>, <Action.DROP: 'drop'>)
    """
    now = _instant(now, "/now")
    _check_max_failures(max_failures)
    rule = RESULT_TABLE[result.result_class]
    if state.disabled_at is not None:
        action = Action.DONE if rule.action is Action.DONE else Action.DROP
        return ResultChange(state, rule.outcome, action)
    action = rule.action
    if rule.effect is Effect.RECORD_SUCCESS:
        state = attrs.evolve(state, failure_count=0, last_success_at=now)
    elif rule.effect is Effect.DEACTIVATE:
        since = result.invalid_since
        if since is None or state.created_at <= since:
            state = attrs.evolve(state, disabled_at=now, disabled_reason=result.disable_reason)
    elif rule.effect is Effect.COUNT_FAILURE:
        count = state.failure_count + 1
        if count >= max_failures:
            state = attrs.evolve(
                state,
                failure_count=count,
                disabled_at=now,
                disabled_reason=DisableReason.REPEATED_FAILURES,
            )
            action = Action.DROP
        else:
            state = attrs.evolve(state, failure_count=count)
    return ResultChange(state, rule.outcome, action)


def _micros(value: timedelta) -> int:
    return value // _MICROSECOND


def retry_delay(
    attempt: int, base: timedelta, cap: timedelta, retry_after: timedelta, jitter: float
) -> timedelta:
    """Return the delay before retry number ``attempt`` (R2).

    ``max(retry_after, min(cap, base * 2**(attempt-1)) * jitter)``, rounded to the
    microsecond. The growth stops at ``cap`` before it is computed, so a huge ``attempt``
    costs nothing. The delay never falls when ``attempt`` grows and is never below
    ``retry_after``.

    Args:
        attempt: the number of the retry, an integer >= 1.
        base: the first delay.
        cap: the largest delay before jitter, at least ``base``.
        retry_after: the provider's Retry-After (zero when none).
        jitter: the caller's random factor in [0.5, 1].

    Raises:
        InvalidDelivery: checked in this order: ``attempt`` not an integer >= 1 (booleans
            included, ``invalid_attempt``); ``jitter`` not a real number in [0.5, 1]
            (booleans and NaN included, ``invalid_jitter``); a duration that is not a
            non-negative timedelta, or ``cap < base`` (``invalid_duration``).

    Example:
        >>> retry_delay(3, timedelta(seconds=1), timedelta(seconds=60), timedelta(0), 1.0)
        datetime.timedelta(seconds=4)
    """
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise InvalidDelivery(
            "invalid_attempt", f"attempt must be an integer >= 1, not {attempt!r}", "/attempt"
        )
    if (
        isinstance(jitter, bool)
        or not isinstance(jitter, numbers.Real)
        or not 0.5 <= jitter <= 1  # also refuses NaN
    ):
        raise InvalidDelivery(
            "invalid_jitter", f"jitter must be a number in [0.5, 1], not {jitter!r}", "/jitter"
        )
    _duration(base, "/base_s")
    _duration(cap, "/cap_s")
    _duration(retry_after, "/retry_after_s")
    if cap < base:
        raise InvalidDelivery("invalid_duration", f"cap {cap} is below base {base}", "/cap_s")
    base_us, cap_us, exponent = _micros(base), _micros(cap), attempt - 1
    if base_us == 0:
        grown = 0
    elif exponent >= cap_us.bit_length():  # base * 2**exponent >= 2**exponent > cap
        grown = cap_us
    else:
        grown = min(cap_us, base_us << exponent)
    return max(retry_after, timedelta(microseconds=grown) * float(jitter))


def retry_at(
    due_at: datetime, now: datetime, delay: timedelta, max_age: timedelta
) -> datetime | None:
    """Return when to retry a push, or None when the retry would come too late (R2).

    A retry at ``now + delay`` is dropped as ``expired`` when it lies after
    ``due_at + max_age``; exactly at that instant it is still made. A time past the last
    representable instant counts as too late.

    Args:
        due_at: the hint's due time (t0: the triggering event, or the window end of a flush).
        now: the instant of the failed attempt.
        delay: the delay from `retry_delay`.
        max_age: the oldest a hint may get (``push.max_age``).

    Returns:
        The instant of the next attempt in UTC, or None to drop the hint as expired.

    Raises:
        InvalidDelivery: ``delay`` or ``max_age`` is not a non-negative timedelta
            (``invalid_duration``).
        NaiveDatetime: ``due_at`` or ``now`` has no time zone.

    Example:
        >>> from datetime import datetime, UTC
        >>> t0 = datetime(2026, 10, 23, 12, tzinfo=UTC)
        >>> retry_at(t0, t0, timedelta(minutes=5), timedelta(hours=1))
        datetime.datetime(2026, 10, 23, 12, 5, tzinfo=datetime.timezone.utc)
        >>> retry_at(t0, t0, timedelta(hours=2), timedelta(hours=1)) is None
        True
    """
    due = _instant(due_at, "/due_at")
    start = _instant(now, "/now")
    _duration(delay, "/delay_s")
    _duration(max_age, "/max_age_s")
    # Compared as integers: due_at + max_age may lie beyond the last datetime.
    if _micros(delay) > _micros(due - start) + _micros(max_age):
        return None
    try:
        return start + delay
    except OverflowError:
        return None


def _id(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str):
        raise UsageError(
            "invalid_type", f"an ID must be a string, not {value!r}", f"/{attribute.name}"
        )


def _optional_id(inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        _id(inst, attribute, value)


def _flag(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise UsageError(
            "invalid_type", f"{attribute.name} must be a boolean: {value!r}", f"/{attribute.name}"
        )


def _number(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(
            "invalid_type", f"{attribute.name} must be an integer: {value!r}", f"/{attribute.name}"
        )
    if value < 0:
        raise InvalidDelivery(
            "invalid_count", f"{attribute.name} must be >= 0, not {value}", f"/{attribute.name}"
        )


def _kind(value: object) -> Kind:
    return parse_kind(value, "/kind")


def _cleared(value: object) -> tuple[str, ...]:
    items = tuple(value) if isinstance(value, list | tuple) else None
    if items is None or not all(isinstance(item, str) for item in items):
        raise UsageError(
            "invalid_type", f"cleared must be a sequence of IDs: {value!r}", "/cleared"
        )
    return items


@attrs.frozen(kw_only=True)
class Notification:
    """Everything one push carries: IDs, the kind, flags, a count and the badge (R3).

    There is no field for text: titles and bodies are never pushed; the app fetches what it
    shows. Two forms exist. A hint has a thread for the thread kinds (none for ``security``
    and ``admin``), and no ``cleared``. The badge sync (kind ``sync``, B2) has only ``id``,
    ``badge``, ``cleared`` and ``instance_id``: no thread, message or target, not quiet,
    count 0.

    Args:
        id: the notification's ID, shared by the pushes of one hint to one person.
        kind: the hint's kind, or ``sync``.
        thread: the thread of a thread kind.
        message: the message the hint points at.
        target: another object the hint is about (a run, a pending device ...).
        quiet: deliver without sound (D7).
        count: the unread count of a flush (D8), else 0.
        badge: the recipient's badge number at send time (B1).
        cleared: for ``sync`` only: the threads read since the last sync, in order.
        instance_id: the ID of the instance that sends it (an id, R3), in both forms,
            so that an app signed in to several instances knows which one to ask.

    Raises:
        InvalidKind: ``kind`` is not a kind.
        InvalidDelivery: a negative ``count`` or ``badge`` (``invalid_count``), a thread kind
            without thread (``missing_thread``), or a member its form does not allow
            (``invalid_notification``).
        UsageError: a member of the wrong type (``invalid_type``).

    Example:
        >>> Notification(id="n-1", kind="sync", badge=2, cleared=["t-42"]).cleared
        ('t-42',)
    """

    id: str = attrs.field(validator=_id)
    kind: Kind = attrs.field(converter=_kind)
    thread: str | None = attrs.field(default=None, validator=_optional_id)
    message: str | None = attrs.field(default=None, validator=_optional_id)
    target: str | None = attrs.field(default=None, validator=_optional_id)
    quiet: bool = attrs.field(default=False, validator=_flag)
    count: int = attrs.field(default=0, validator=_number)
    badge: int = attrs.field(validator=_number)
    cleared: tuple[str, ...] = attrs.field(default=(), converter=_cleared)
    instance_id: str | None = attrs.field(default=None, validator=_optional_id)

    def __attrs_post_init__(self) -> None:
        if self.kind in THREAD_KINDS:
            if self.thread is None:
                raise InvalidDelivery(
                    "missing_thread", f"a {self.kind.value} hint needs a thread", "/thread"
                )
        elif self.thread is not None or self.message is not None:
            where = "/thread" if self.thread is not None else "/message"
            raise InvalidDelivery(
                "invalid_notification", f"a {self.kind.value} push has no thread", where
            )
        if self.kind is Kind.SYNC:
            carried = {"target": self.target is not None, "quiet": self.quiet, "count": self.count}
            for name, present in carried.items():
                if present:
                    raise InvalidDelivery(
                        "invalid_notification", f"a badge sync carries no {name}", f"/{name}"
                    )
        elif self.cleared:
            raise InvalidDelivery(
                "invalid_notification", "only a badge sync carries cleared threads", "/cleared"
            )
