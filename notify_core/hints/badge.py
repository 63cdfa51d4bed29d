"""The badge number and when a read schedules a badge sync (rules B1, B2).

The badge counts the threads a person can read that are unread and, in addition, hold an
unread mention of the person, have effective level ``all``, or are in a DM channel (B1). A read
that makes a thread stop counting lowers the badge (also a read past its last unread mention
while it stays unread); only that schedules a badge sync, at most one per person per
``badge_sync_min_interval`` (B2).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import attrs

from notify_core.hints.levels import Level, parse_level
from notify_core.values.errors import InvalidFacts, InvalidInput, NotifyError
from notify_core.values.instants import require_instant

__all__ = [
    "ThreadBadgeFacts",
    "badge_count",
    "badge_sync_due",
    "counts_for_badge",
    "counts_values",
    "read_lowers_badge",
]

_ZERO: Final = timedelta(0)


def _flag(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise InvalidFacts(
            "invalid_flag", f"{attribute.name} must be a boolean: {value!r}", f"/{attribute.name}"
        )


def _check_seq(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        code = "invalid_count" if name.startswith("unread_mentions") else "invalid_seq"
        raise InvalidFacts(code, f"{name} must be an integer >= 0, not {value!r}", f"/{name}")
    return value


def _seq(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    _check_seq(value, attribute.name)


def _thread(_inst: object, _attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str):
        raise InvalidFacts("invalid_thread", f"thread must be an ID string: {value!r}", "/thread")


def _level(value: object) -> Level:
    return parse_level(value, "/level")


@attrs.frozen(kw_only=True)
class ThreadBadgeFacts:
    """What the badge needs to know of one thread for one person (B1).

    Args:
        thread: the thread's ID.
        readable: whether the person may read the thread now.
        dm: whether the thread is in a direct-message channel.
        level: the person's effective level for the thread (L3, L4).
        last_message_seq: the position of the thread's newest message.
        unread_floor_seq: messages at or below this position never count as unread.
        read_seq: the person's read position in the thread, 0 without one.
        unread_mentions: unread mentions of the person in the thread.

    Raises:
        InvalidFacts: a flag that is not a boolean (``invalid_flag``), a position that is not
            an integer >= 0 (``invalid_seq``), a negative or non-integer mention count
            (``invalid_count``), a thread ID that is not a string (``invalid_thread``).
        InvalidLevel: ``level`` is not a level.

    Example:
        >>> ThreadBadgeFacts(thread="t-1", level="all", last_message_seq=3).unread
        True
    """

    thread: str = attrs.field(validator=_thread)
    readable: bool = attrs.field(default=True, validator=_flag)
    dm: bool = attrs.field(default=False, validator=_flag)
    level: Level = attrs.field(converter=_level)
    last_message_seq: int = attrs.field(validator=_seq)
    unread_floor_seq: int = attrs.field(default=0, validator=_seq)
    read_seq: int = attrs.field(default=0, validator=_seq)
    unread_mentions: int = attrs.field(default=0, validator=_seq)

    @property
    def unread(self) -> bool:
        """Whether the thread holds a message past the read position and the floor (B1)."""
        return self.last_message_seq > max(self.read_seq, self.unread_floor_seq)


def counts_values(
    readable: bool,
    dm: bool,
    level: Level,
    last_message_seq: int,
    unread_floor_seq: int,
    read_seq: int,
    unread_mentions: int,
) -> bool:
    """The rule of `counts_for_badge` (B1) over the values of `ThreadBadgeFacts`, checked by
    the caller: the badge of a push round counts thousands of threads without building them.

    Example:
        >>> counts_values(True, False, Level.ALL, 3, 0, 0, 0)
        True
    """
    unread = last_message_seq > max(read_seq, unread_floor_seq)
    return readable and unread and (unread_mentions > 0 or level is Level.ALL or dm)


def _counts(t: ThreadBadgeFacts, read_seq: int, mentions: int | None = None) -> bool:
    if mentions is None:
        mentions = t.unread_mentions
    return counts_values(
        t.readable, t.dm, t.level, t.last_message_seq, t.unread_floor_seq, read_seq, mentions
    )


def counts_for_badge(t: ThreadBadgeFacts) -> bool:
    """Tell whether a thread adds one to the person's badge (B1).

    It counts when the person can read it, it is unread, and it holds an unread mention, or
    has effective level ``all``, or is in a DM channel. A thread that is not unread never
    counts, whatever ``unread_mentions`` says.

    Example:
        >>> counts_for_badge(
        ...     ThreadBadgeFacts(thread="t-1", level="mentions", last_message_seq=5, read_seq=5,
        ...                      unread_mentions=2)
        ... )
        False
    """
    return _counts(t, t.read_seq)


def badge_count(threads: Iterable[ThreadBadgeFacts]) -> int:
    """Return a person's badge number: how many of ``threads`` count (B1).

    Args:
        threads: one row per thread of the person, in any order.

    Raises:
        InvalidFacts: the same thread appears twice (``duplicate_thread``, pointer
            ``/threads/<index>/thread``): a thread counts at most once.

    Example:
        >>> badge_count([
        ...     ThreadBadgeFacts(thread="t-1", level="all", last_message_seq=3),
        ...     ThreadBadgeFacts(thread="t-2", level="mentions", last_message_seq=3),
        ... ])
        1
    """
    seen: set[str] = set()
    badge = 0
    for index, t in enumerate(threads):
        if t.thread in seen:
            raise InvalidFacts(
                "duplicate_thread",
                f"thread {t.thread!r} appears twice",
                f"/threads/{index}/thread",
            )
        seen.add(t.thread)
        badge += _counts(t, t.read_seq)
    return badge


def read_lowers_badge(
    t: ThreadBadgeFacts,
    previous_read_seq: int,
    new_read_seq: int,
    *,
    unread_mentions_after: int | None = None,
) -> bool:
    """Tell whether moving the read position of a thread lowers the badge (B2).

    True exactly when the thread counts at ``previous_read_seq`` and not at ``new_read_seq``;
    ``t.read_seq`` is not read. ``t.unread_mentions`` are the mentions unread at the previous
    position, ``unread_mentions_after`` those still unread at the new one: a read past the
    last unread mention of a thread that stays unread stops it counting at level
    ``mentions`` outside a DM. A mark as unread (a lower position) never lowers the badge.

    Args:
        t: the thread's facts at the time of the read, before it.
        previous_read_seq: the read position before the read (0 without one).
        new_read_seq: the read position after it.
        unread_mentions_after: the unread mentions at ``new_read_seq``; ``None``: as many as
            before (right only for a read that passes no mention).

    Raises:
        InvalidFacts: a position or count that is not an integer >= 0 (``invalid_seq``,
            ``invalid_count``).

    Example:
        >>> t = ThreadBadgeFacts(thread="t-1", level="all", last_message_seq=7)
        >>> read_lowers_badge(t, previous_read_seq=3, new_read_seq=7)
        True
        >>> t = ThreadBadgeFacts(thread="t-1", level="mentions", last_message_seq=7,
        ...                      unread_mentions=1)
        >>> read_lowers_badge(t, 3, 5, unread_mentions_after=0)
        True
    """
    _check_seq(previous_read_seq, "previous_read_seq")
    _check_seq(new_read_seq, "new_read_seq")
    if unread_mentions_after is not None:
        _check_seq(unread_mentions_after, "unread_mentions_after")
    if new_read_seq <= previous_read_seq:
        return False  # a mark as unread or the same position: nothing newly read
    before = _counts(t, previous_read_seq)
    return before and not _counts(t, new_read_seq, unread_mentions_after)


def badge_sync_due(
    last_sync_at: datetime | None, now: datetime, min_interval: timedelta
) -> datetime:
    """Return when a badge sync that a lowering read asks for may be sent (B2).

    At most one badge sync per person per ``min_interval``: the sync goes out at ``now``
    unless the person's previous sync was less than ``min_interval`` before, then at
    ``last_sync_at + min_interval``. The caller asks only after `read_lowers_badge` said
    yes, and schedules nothing when a sync of the person is already pending: that sync
    computes the badge when it is sent and so carries this read too.

    Args:
        last_sync_at: when the person's previous badge sync was sent; None when never.
        now: the instant of the read.
        min_interval: ``badge_sync_min_interval``.

    Returns:
        The instant, in UTC, at which to send the sync: never before ``now``.

    Raises:
        InvalidInput: ``min_interval`` is not a non-negative timedelta (``invalid_duration``).
        NaiveDatetime: ``now`` or ``last_sync_at`` has no time zone.

    Example:
        >>> t = datetime(2026, 10, 23, 12, tzinfo=UTC)
        >>> badge_sync_due(t, t + timedelta(seconds=10), timedelta(seconds=30))
        datetime.datetime(2026, 10, 23, 12, 0, 30, tzinfo=datetime.timezone.utc)
    """
    start = _instant(now, "/now")
    if not isinstance(min_interval, timedelta) or min_interval < _ZERO:
        raise InvalidInput(
            "invalid_duration",
            f"min_interval must be a non-negative timedelta: {min_interval!r}",
            "/min_interval_s",
        )
    if last_sync_at is None:
        return start
    last = _instant(last_sync_at, "/last_sync_at")
    # Compared before adding: last_sync_at + min_interval may lie beyond the last datetime.
    if start - last >= min_interval:
        return start
    try:
        return last + min_interval
    except OverflowError:
        raise InvalidInput(
            "invalid_duration", "the next badge sync lies past the last instant", "/min_interval_s"
        ) from None


def _instant(value: object, pointer: str) -> datetime:
    try:
        return require_instant(value, pointer[1:]).astimezone(UTC)
    except NotifyError as err:
        raise err.at(pointer) from None
