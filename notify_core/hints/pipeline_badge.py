"""The badge inside the hint pipeline: which threads count (B1) and when a read syncs (B2).

`notify_core.hints.badge` decides for one thread from its facts; this module gathers those facts
through the pipeline's ports (`WorldFacts`, `PreferenceFacts`, `Schedule`) for
`notify_core.hints.pipeline.Pipeline`, which calls it on reads and at badge syncs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from notify_core.events.log import Event
from notify_core.hints.badge import (
    ThreadBadgeFacts,
    counts_for_badge,
    counts_values,
    read_lowers_badge,
)
from notify_core.hints.decide import Policy
from notify_core.hints.fan_out import level_facts
from notify_core.hints.levels import Level, LevelFacts, effective
from notify_core.hints.ports import PreferenceFacts, Schedule, ThreadInfo, WorldFacts

__all__ = [
    "badge_facts",
    "counted_threads",
    "plain_badge_values",
    "read_lowers",
    "read_lowers_checked",
    "sync_after_read",
]

_DEFAULT_LEVELS: Final = LevelFacts()


def badge_facts(
    world: WorldFacts,
    prefs: PreferenceFacts,
    user: str,
    thread: str,
    now: datetime,
    info: ThreadInfo | None = None,
) -> ThreadBadgeFacts | None:
    """The facts of one thread for one person's badge at ``now``, or ``None`` (thread unknown).

    Args:
        world: the host's facts.
        prefs: the preferences (the person's level for the thread).
        user: the person.
        thread: the thread.
        now: the instant the level is read at.
        info: the thread's facts when the caller read them already.
    """
    info = info or world.thread(thread)
    if info is None:
        return None
    channel = world.channel(info.channel)
    levels = level_facts(prefs, thread, (user,)).get(user, _DEFAULT_LEVELS)
    return ThreadBadgeFacts(
        thread=thread,
        readable=world.allowed(user, thread),
        dm=channel is not None and channel.direct,
        level=effective(levels, now),
        last_message_seq=info.last_message_seq,
        unread_floor_seq=info.unread_floor_seq,
        read_seq=world.read_seq(user, thread),
        unread_mentions=world.unread_mentions(user, thread),
    )


def counted_threads(
    world: WorldFacts, prefs: PreferenceFacts, user: str, now: datetime
) -> list[str]:
    """Return the threads that count for a person's badge at ``now`` (B1): the badge is their
    number.

    The facts of each unread thread are those `badge_facts` reads, counted by the rule of
    `notify_core.hints.badge.counts_for_badge`; a push round asks this for every thread of every
    recipient, so the facts are checked as plain values and a `ThreadBadgeFacts` is built
    only when one is not (to raise its error).
    """
    counted = []
    for thread in world.badge_threads(user):
        info = world.thread(thread)
        if info is None:
            continue
        read_seq = world.read_seq(user, thread)
        # A thread that is not unread never counts (B1): skip reading its facts.
        if info.last_message_seq <= max(read_seq, info.unread_floor_seq):
            continue
        channel = world.channel(info.channel)
        levels = level_facts(prefs, thread, (user,)).get(user, _DEFAULT_LEVELS)
        readable = world.allowed(user, thread)
        mentions = world.unread_mentions(user, thread)
        dm = channel is not None and channel.direct
        level = effective(levels, now)
        if plain_badge_values(readable, dm, level, info, read_seq, mentions):
            counts = counts_values(
                readable,
                dm,
                level,
                info.last_message_seq,
                info.unread_floor_seq,
                read_seq,
                mentions,
            )
        else:  # the facts' own checks raise what is wrong (or take a value plain ints miss)
            counts = counts_for_badge(
                ThreadBadgeFacts(
                    thread=thread,
                    readable=readable,
                    dm=dm,
                    level=level,
                    last_message_seq=info.last_message_seq,
                    unread_floor_seq=info.unread_floor_seq,
                    read_seq=read_seq,
                    unread_mentions=mentions,
                )
            )
        if counts:
            counted.append(thread)
    return counted


def plain_badge_values(
    readable: object,
    dm: object,
    level: object,
    info: ThreadInfo,
    read_seq: object,
    mentions: object,
) -> bool:
    """Whether the facts of one thread are the plain values `ThreadBadgeFacts` accepts as they
    are (flags of type ``bool``, positions and counts of type ``int`` >= 0, a `Level`)."""
    return (
        type(readable) is bool
        and type(dm) is bool
        and type(level) is Level
        and type(read_seq) is int
        and read_seq >= 0
        and type(mentions) is int
        and mentions >= 0
        and type(info.last_message_seq) is int
        and info.last_message_seq >= 0
        and type(info.unread_floor_seq) is int
        and info.unread_floor_seq >= 0
    )


def sync_after_read(
    world: WorldFacts,
    prefs: PreferenceFacts,
    schedule: Schedule,
    policy: Policy,
    event: Event,
    user: str,
    thread: str,
    new_seq: int,
) -> datetime | None:
    """B2: when a read lowers the badge, mark a sync pending and return its due time.

    At most one sync is pending per person and syncs are ``policy.badge_sync_min_interval``
    apart. ``None``: the read lowers nothing (a mark as unread, a read of what was read, B3's
    own messages), or a pending sync will carry it.
    """
    if not read_lowers(world, prefs, user, thread, new_seq, event.occurred_at):
        return None
    last, pending = schedule.badge_sync(user)
    if pending:
        return None
    at = event.occurred_at
    if last is not None and last + policy.badge_sync_min_interval > at:
        at = last + policy.badge_sync_min_interval
    schedule.set_badge_sync(user, last, True)
    return at


def read_lowers(
    world: WorldFacts, prefs: PreferenceFacts, user: str, thread: str, new_seq: int, now: datetime
) -> bool:
    """Whether a person's read of a thread up to ``new_seq`` at ``now`` lowers their badge (B2):
    `read_lowers_badge` of the thread's `badge_facts`.

    Every read of the log asks, half of them of what was read already: the facts are read as
    plain values and only as far as the answer needs them (the level, the dearest, only when
    neither a mention nor a DM decides). A value that is not plain goes the way of
    `read_lowers_checked`, whose facts' checks raise what is wrong.
    """
    info = world.thread(thread)
    if info is None:
        return False
    read_seq = world.read_seq(user, thread)
    last, floor = info.last_message_seq, info.unread_floor_seq
    if not (
        type(read_seq) is int
        and read_seq >= 0
        and type(last) is int
        and last >= 0
        and type(floor) is int
        and floor >= 0
        and type(new_seq) is int
    ):
        return read_lowers_checked(world, prefs, user, thread, new_seq, now)
    if new_seq <= read_seq or last <= max(read_seq, floor):
        return False  # nothing newly read, or the thread was read already: it did not count
    readable = world.allowed(user, thread)
    channel = world.channel(info.channel)
    dm = channel is not None and channel.direct
    mentions = world.unread_mentions(user, thread)
    if type(readable) is not bool or type(dm) is not bool or type(mentions) is not int:
        return read_lowers_checked(world, prefs, user, thread, new_seq, now)
    if mentions < 0:
        return read_lowers_checked(world, prefs, user, thread, new_seq, now)
    if not readable:
        return False
    level = None
    if not (mentions or dm):
        level = _level_of(prefs, user, thread, now)
        if level is not Level.ALL:  # B1: it did not count before the read
            return type(level) is not Level and read_lowers_checked(
                world, prefs, user, thread, new_seq, now
            )
    if last <= max(new_seq, floor):
        return True  # read to the end: it counted and no longer does
    if dm:
        return False
    after = world.unread_mentions(user, thread, new_seq) if mentions else 0
    if type(after) is not int or after < 0:
        return read_lowers_checked(world, prefs, user, thread, new_seq, now)
    if after:
        return False  # an unread mention left: it still counts
    if level is None:
        level = _level_of(prefs, user, thread, now)
        if type(level) is not Level:
            return read_lowers_checked(world, prefs, user, thread, new_seq, now)
    return level is not Level.ALL


def read_lowers_checked(
    world: WorldFacts, prefs: PreferenceFacts, user: str, thread: str, new_seq: int, now: datetime
) -> bool:
    """`read_lowers`, with every fact read and checked by `ThreadBadgeFacts` first."""
    facts = badge_facts(world, prefs, user, thread, now)
    if facts is None or new_seq <= facts.read_seq:
        return False
    after = world.unread_mentions(user, thread, new_seq) if facts.unread_mentions else 0
    return read_lowers_badge(facts, facts.read_seq, new_seq, unread_mentions_after=after)


def _level_of(prefs: PreferenceFacts, user: str, thread: str, now: datetime) -> Level:
    """A person's effective level for a thread at ``now``, as `badge_facts` reads it."""
    return effective(level_facts(prefs, thread, (user,)).get(user, _DEFAULT_LEVELS), now)
