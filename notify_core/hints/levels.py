"""Notification levels and the effective level of a person for a thread (rules L1-L7).

The effective level is the first present fact of a fixed chain (L3); a temporary mute on the
selected row wins while it lasts (L4). Only the selected row's ``muted_until`` matters.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any, Final

import attrs

from notify_core.values.errors import InvalidLevel
from notify_core.values.instants import require_instant

__all__ = [
    "EffectiveLevel",
    "Level",
    "LevelFacts",
    "LevelSource",
    "Preference",
    "Target",
    "TargetKind",
    "parse_level",
    "preference_unchanged",
    "resolve_level",
]


class Level(enum.StrEnum):
    """How much a person wants to hear of a thread (L1); members compare equal to their text."""

    ALL = "all"
    MENTIONS = "mentions"
    MUTE = "mute"


class TargetKind(enum.StrEnum):
    """What a preference row is about (L1)."""

    SPACE = "space"
    CHANNEL = "channel"
    THREAD = "thread"


class LevelSource(enum.StrEnum):
    """Which fact of the L3 chain gave the effective level (L6), in chain order."""

    THREAD = "thread"
    CHANNEL = "channel"
    SPACE = "space"
    CHANNEL_DEFAULT = "channel_default"
    DIRECT_MESSAGE = "direct_message"
    PERSONAL_DEFAULT = "personal_default"
    INSTANCE_DEFAULT = "instance_default"


_LEVELS: Final = {level.value: level for level in Level}


def parse_level(value: object, pointer: str = "") -> Level:
    """Return the `Level` named by ``value``.

    Raises:
        InvalidLevel: ``value`` is not ``all``, ``mentions`` or ``mute`` (code ``invalid_level``).

    Example:
        >>> parse_level("mentions")
        <Level.MENTIONS: 'mentions'>
    """
    level = _LEVELS.get(value) if isinstance(value, str) else None
    if level is None:
        raise InvalidLevel("invalid_level", f"not a level: {value!r}", pointer)
    return level


def _level(value: object) -> Level:
    return parse_level(value, "/level")


def _channel_default(value: object) -> Level | None:
    return None if value is None else parse_level(value, "/channel_default")


def _instance_default(value: object) -> Level:
    return parse_level(value, "/instance_default")


def _personal_default(value: object) -> Level | None:
    # L5: an unknown personal default counts as unset; the adapter logs the warning.
    return _LEVELS.get(value) if isinstance(value, str) else None


def _optional_instant(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        require_instant(value, attribute.name)


def _target_kind(value: object) -> TargetKind:
    try:
        return TargetKind(value)  # type: ignore[arg-type]
    except ValueError:
        raise InvalidLevel(
            "invalid_target_kind", f"not a target kind: {value!r}", "/kind"
        ) from None


@attrs.frozen(kw_only=True)
class Target:
    """The thing a preference row is about: a space, a channel or a thread (L1)."""

    kind: TargetKind = attrs.field(converter=_target_kind)
    id: str


@attrs.frozen(kw_only=True)
class Preference:
    """A person's own row for a target: a level and an optional temporary mute (L2).

    Args:
        level: the level the row sets.
        muted_until: while it lies after ``now``, the row means ``mute`` (L4).

    Raises:
        InvalidLevel: ``level`` is not a level.
        NaiveDatetime: ``muted_until`` has no time zone.
    """

    level: Level = attrs.field(converter=_level)
    muted_until: datetime | None = attrs.field(default=None, validator=_optional_instant)


@attrs.frozen(kw_only=True)
class LevelFacts:
    """Exactly the seven facts of the L3 chain for one person and one thread.

    Args:
        thread: the person's own row for the thread.
        channel: the person's own row for the thread's channel.
        space: the person's own row for the channel's space.
        channel_default: the channel's default level.
        direct_message: whether the channel is a direct-message channel.
        personal_default: the person's default; a value that is not a level counts as unset (L5).
        instance_default: the instance's default level.

    Example:
        >>> facts = LevelFacts(channel=Preference(level="all"), instance_default="mentions")
        >>> facts.channel.level
        <Level.ALL: 'all'>
    """

    thread: Preference | None = None
    channel: Preference | None = None
    space: Preference | None = None
    channel_default: Level | None = attrs.field(default=None, converter=_channel_default)
    direct_message: bool = False
    personal_default: Level | None = attrs.field(default=None, converter=_personal_default)
    instance_default: Level = attrs.field(default=Level.MENTIONS, converter=_instance_default)


@attrs.frozen(kw_only=True)
class EffectiveLevel:
    """The answer of `resolve_level` (L6).

    Args:
        level: the effective level.
        source: the fact that gave it.
        muted_until: present when a temporary mute of the selected row made it ``mute``.
    """

    level: Level
    source: LevelSource
    muted_until: datetime | None = None


# Unmuted answers are shared values: resolve_level runs once per recipient in a fan-out.
_PLAIN: Final = {
    (level, source): EffectiveLevel(level=level, source=source)
    for level in Level
    for source in LevelSource
}


def resolve_level(facts: LevelFacts, now: datetime) -> EffectiveLevel:
    """Return the effective level of a person for a thread at ``now`` (L3, L4).

    Args:
        facts: the seven facts of the chain.
        now: the instant of the decision.

    Returns:
        The level, the fact it came from, and ``muted_until`` when a temporary mute applies.

    Raises:
        NaiveDatetime: ``now`` has no time zone.

    Example:
        >>> from datetime import datetime, UTC
        >>> now = datetime(2026, 10, 23, 12, tzinfo=UTC)
        >>> resolve_level(LevelFacts(instance_default="mentions"), now).source
        <LevelSource.INSTANCE_DEFAULT: 'instance_default'>
    """
    require_instant(now, "now")
    row, source = _selected_row(facts)
    if row is not None:
        until = row.muted_until
        if until is not None and until > now:
            return EffectiveLevel(level=Level.MUTE, source=source, muted_until=until)
        return _PLAIN[row.level, source]
    return _PLAIN[_default_level(facts)]


def effective(facts: LevelFacts, now: datetime) -> Level:
    """Return only the effective level, without building an answer (the fast path of decide)."""
    row = facts.thread or facts.channel or facts.space
    if row is not None:
        until = row.muted_until
        if until is not None and until > now:
            return Level.MUTE
        return row.level
    return _default_level(facts)[0]


def _selected_row(facts: LevelFacts) -> tuple[Preference | None, LevelSource]:
    if facts.thread is not None:
        return facts.thread, LevelSource.THREAD
    if facts.channel is not None:
        return facts.channel, LevelSource.CHANNEL
    if facts.space is not None:
        return facts.space, LevelSource.SPACE
    return None, LevelSource.CHANNEL_DEFAULT


def _default_level(facts: LevelFacts) -> tuple[Level, LevelSource]:
    if facts.channel_default is not None:
        return facts.channel_default, LevelSource.CHANNEL_DEFAULT
    if facts.direct_message:
        return Level.ALL, LevelSource.DIRECT_MESSAGE
    if facts.personal_default is not None:
        return facts.personal_default, LevelSource.PERSONAL_DEFAULT
    return facts.instance_default, LevelSource.INSTANCE_DEFAULT


def preference_unchanged(a: Preference | None, b: Preference | None) -> bool:
    """Tell whether two rows mean the same (L7): equal level and equal ``muted_until``.

    Instants compare as instants (microsecond precision); both absent counts as equal.
    Absent rows are equal only to absent rows.
    """
    if a is None or b is None:
        return a is b
    return a.level == b.level and a.muted_until == b.muted_until
