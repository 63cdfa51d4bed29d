"""What notify reads from a preference record in effect, and the delivery rules M1-M5.

A preference record (`notify_core.records`) stores uninterpreted values; notify is the
composing delivery system that interprets the values of two channels, ``push`` and
``email`` (docs/rules.md#records). This module holds the interpretation as plain values, so
that the push path (`notify_core.hints`), the mail drain (`notify_core.inbox`) and the audit
receive it like any other fact:

- `RecordInEffect`: the record that governs a delivery (M1) reduced to what notify reads:
  its id, whether it is suspended (M2) and one `ChannelRule` per channel (M3-M5), with the
  pointers of the values it could not read (M6: not applied, and named by the audit).
- `channel_rule`: reads one channel value (``{"enabled"?, "max_per_day"?, "format"?}``).
- `verdict`: whether a record lets one more delivery go on a channel, else the reason
  (``suspended``, ``record_channel_off``, ``frequency_cap``).
- `local_day`, `next_local_midnight` and `DayCount`: the person's local day of the cap (M4).
- `RecordFacts`: the port a pipeline and a drain read records and day counts through.

Rules: docs/rules.md#records (M1-M6).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Final, Protocol

import attrs

from notify_core.values.errors import UsageError
from notify_core.values.instants import require_instant
from notify_core.values.opaque import Opaque, json_pointer_token
from notify_core.values.zones import zone_or_utc

__all__ = [
    "ALLOWED",
    "ChannelRule",
    "DayCount",
    "DeliveryChannel",
    "RecordFacts",
    "RecordInEffect",
    "RecordReason",
    "channel_rule",
    "local_day",
    "next_local_midnight",
    "verdict",
]


class DeliveryChannel(enum.StrEnum):
    """The channels of a record notify reads (section 8): the push hints and the mails."""

    PUSH = "push"
    EMAIL = "email"


class RecordReason(enum.StrEnum):
    """Why a record holds a delivery back (M2-M4); also the skip reasons of the lines."""

    SUSPENDED = "suspended"
    RECORD_CHANNEL_OFF = "record_channel_off"
    FREQUENCY_CAP = "frequency_cap"


#: What `verdict` answers when the delivery may go.
ALLOWED: Final = None


@attrs.frozen
class ChannelRule:
    """What notify reads from one channel value of a record (M3-M5).

    Args:
        enabled: false turns the channel off for every kind and category (M3).
        max_per_day: at most this many deliveries per person per local day (M4), ``None``
            for no cap; at least 1.
        plain: ``"format": "plain"``: mails have the text body only (M5).
    """

    enabled: bool = True
    max_per_day: int | None = None
    plain: bool = False


_OPEN: Final = ChannelRule()


@attrs.frozen(kw_only=True)
class RecordInEffect:
    """The record that governs a delivery (M1), as notify reads it.

    Build it with `notify_core.records.rules_in_effect` from a stored record, or directly
    (tests, tables). A person with no record in effect has none: ``None`` everywhere.

    Args:
        preference_id: the record's id, named by the lines and rows of its deliveries (M6).
        suspended: the record stood suspended at the instant (M2).
        push: the rule read from the record's ``push`` value.
        email: the rule read from the record's ``email`` value.
        not_applied: JSON pointers (into the record's channel preferences) of the values
            notify could not read and so did not apply (M6), e.g. ``/push/max_per_day``.
    """

    preference_id: str
    suspended: bool = False
    push: ChannelRule = _OPEN
    email: ChannelRule = _OPEN
    not_applied: tuple[str, ...] = ()

    def rule(self, channel: DeliveryChannel) -> ChannelRule:
        """Return the rule of one channel."""
        return self.push if channel is DeliveryChannel.PUSH else self.email

    @property
    def caps_push(self) -> bool:
        """Tell whether the push cap is read (a pipeline then counts the day's pushes)."""
        return self.push.max_per_day is not None

    @property
    def caps_email(self) -> bool:
        """Tell whether the email cap is read (a drain then counts the day's mails)."""
        return self.email.max_per_day is not None


def verdict(
    record: RecordInEffect | None, channel: DeliveryChannel, delivered_today: int = 0
) -> RecordReason | None:
    """Tell whether one more delivery may go on ``channel`` under ``record`` (M2-M4).

    Args:
        record: the record in effect at the instant (M1), ``None`` when none is.
        channel: ``push`` or ``email``.
        delivered_today: deliveries already made on that channel to the person in the
            person's local day of the instant (M4).

    Returns:
        ``None`` (`ALLOWED`) or the reason, checked in the order ``suspended``,
        ``record_channel_off``, ``frequency_cap``.

    Example:
        >>> capped = RecordInEffect(preference_id="p1", push=ChannelRule(max_per_day=2))
        >>> verdict(capped, DeliveryChannel.PUSH, 1), verdict(capped, DeliveryChannel.PUSH, 2)
        (None, <RecordReason.FREQUENCY_CAP: 'frequency_cap'>)
    """
    if record is None:
        return ALLOWED
    if record.suspended:
        return RecordReason.SUSPENDED
    rule = record.push if channel is DeliveryChannel.PUSH else record.email
    if not rule.enabled:
        return RecordReason.RECORD_CHANNEL_OFF
    cap = rule.max_per_day
    if cap is not None and delivered_today >= cap:
        return RecordReason.FREQUENCY_CAP
    return ALLOWED


def channel_rule(value: Opaque | None, channel: str) -> tuple[ChannelRule, tuple[str, ...]]:
    """Read one channel value of a record: the rule and the pointers of what was not read.

    ``value`` is the record's value for ``channel`` (``None`` when the record sets none).
    notify reads ``{"enabled"?: bool, "max_per_day"?: int >= 1, "format"?: "plain"|"rich"}``;
    other members change nothing. A value that is not an object, or a read member of the wrong
    type or range, is not applied and named (M6): each read member on its own (a wrong
    ``max_per_day`` does not undo ``"enabled": false``).

    Example:
        >>> channel_rule({"enabled": False, "max_per_day": 0}, "push")
        (ChannelRule(enabled=False, max_per_day=None, plain=False), ('/push/max_per_day',))
        >>> channel_rule("real-time", "push")
        (ChannelRule(enabled=True, max_per_day=None, plain=False), ('/push',))
    """
    if value is None:
        return _OPEN, ()
    at = "/" + json_pointer_token(channel)
    if not isinstance(value, Mapping):
        return _OPEN, (at,)
    bad: list[str] = []
    enabled = value.get("enabled", True)
    if type(enabled) is not bool:
        bad.append(f"{at}/enabled")
        enabled = True
    cap = value.get("max_per_day")
    if cap is not None and (type(cap) is not int or cap < 1):
        bad.append(f"{at}/max_per_day")
        cap = None
    fmt = value.get("format")
    if fmt is not None and fmt not in ("plain", "rich"):
        bad.append(f"{at}/format")
        fmt = None
    rule = ChannelRule(enabled=enabled, max_per_day=cap, plain=fmt == "plain")
    return (_OPEN if rule == _OPEN else rule), tuple(bad)


def local_day(instant: datetime, time_zone: str | None) -> date:
    """Return the person's local date at ``instant`` (the person's zone, else UTC; M4).

    Raises:
        NaiveDatetime: ``instant`` has no time zone.
    """
    require_instant(instant, "instant")
    return instant.astimezone(zone_or_utc(time_zone)).date()


def next_local_midnight(instant: datetime, time_zone: str | None) -> datetime:
    """Return the first instant of the person's next local day, in UTC (M4: a capped mail waits).

    Where midnight does not exist (a zone moving its clocks at 00:00), the day starts at the
    first local time that does.

    Raises:
        NaiveDatetime: ``instant`` has no time zone.

    Example:
        >>> t = datetime(2026, 3, 1, 22, 30, tzinfo=UTC)
        >>> next_local_midnight(t, "Europe/Berlin").isoformat()
        '2026-03-01T23:00:00+00:00'
    """
    require_instant(instant, "instant")
    zone = zone_or_utc(time_zone)
    day = instant.astimezone(zone).date() + timedelta(days=1)
    # A midnight in a gap reads with the offset before the gap (PEP 495, fold 0): the instant
    # is the first of the new day.
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)


@attrs.frozen
class DayCount:
    """Deliveries on one channel to one person in one local day (M4), as a value.

    ``DayCount()`` counts nothing; `on` reads the count of a day (0 for any other day) and
    `plus_one` counts one more delivery on a day (starting the day afresh when it changed).
    """

    day: date | None = None
    count: int = 0

    def on(self, day: date) -> int:
        """Return the deliveries counted on ``day``."""
        return self.count if day == self.day else 0

    def plus_one(self, day: date) -> DayCount:
        """Count one more delivery on ``day``.

        Raises:
            UsageError: ``day`` is before the day counted (days only move forward).
        """
        if self.day is not None and day < self.day:
            raise UsageError("day_went_back", f"{day} is before {self.day}", "/day")
        return DayCount(day, self.count + 1 if day == self.day else 1)


class RecordFacts(Protocol):
    """People's preference records in effect and their deliveries per local day (M1-M6).

    Optional for the push pipeline and the mail drain: without it no record shapes a delivery.
    """

    def records_in_effect(
        self, users: Sequence[str], now: datetime
    ) -> Mapping[str, RecordInEffect]:
        """Return the record in effect at ``now`` of each of ``users`` who has one (M1)."""

    def deliveries_on(self, user: str, channel: DeliveryChannel, day: date) -> int:
        """Return the deliveries on ``channel`` that named a record, on a local ``day`` (M4)."""

    def count_delivery(self, user: str, channel: DeliveryChannel, day: date) -> None:
        """Count one delivery on ``channel`` that named a record, on a local ``day`` (M4)."""
