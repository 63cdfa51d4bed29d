"""The ports of the pipeline: what it reads and where it writes, as small protocols.

Two implementations exist: `notify_core.hints.memory.MemoryStore` (the embedded default, used by
``notify replay``) and the PostgreSQL adapter in ``notify_pg``. The pipeline never knows
which one it talks to; a behaviour difference between them is a bug.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol

import attrs

from notify_core.events.log import Event
from notify_core.hints.decide import Connection, Device, Switches
from notify_core.hints.levels import LevelFacts
from notify_core.hints.quiet import QuietRule
from notify_core.values.kinds import Kind
from notify_core.values.record_rules import RecordFacts

__all__ = [
    "ChannelInfo",
    "Due",
    "PreferenceFacts",
    "RecordFacts",
    "Schedule",
    "ThreadInfo",
    "UserInfo",
    "Window",
    "WorldFacts",
]


@attrs.frozen(kw_only=True)
class UserInfo:
    """A person or bot as the host knows it."""

    id: str
    kind: str
    active: bool = True
    time_zone: str | None = None

    @property
    def active_human(self) -> bool:
        """Only active humans are candidates for hints (S1)."""
        return self.active and self.kind == "human"


@attrs.frozen(kw_only=True)
class ChannelInfo:
    """A channel: its space (none for a DM), kind, participants and default level."""

    id: str
    kind: str
    space: str | None = None
    participants: tuple[str, ...] = ()
    default_level: str | None = None
    archived: bool = False

    @property
    def direct(self) -> bool:
        """Whether this is a direct-message channel."""
        return self.kind == "dm"


@attrs.frozen(kw_only=True)
class ThreadInfo:
    """A thread: its channel, whether it is the channel's main thread, and its positions."""

    id: str
    channel: str
    main: bool = False
    last_message_seq: int = 0
    unread_floor_seq: int = 0
    newest_message: str | None = None


@attrs.frozen(kw_only=True)
class Window:
    """An open bundling window of one person on one thread (D6)."""

    end: datetime
    collected: int = 0


@attrs.frozen(kw_only=True, order=True)
class Due:
    """Work that comes due at an instant: a window's end, a delayed push, a badge sync.

    Ordered by (due time, recipient, thread, device, what): the replay order of formats.md.
    """

    at: datetime
    recipient: str
    thread: str = ""
    device: str = ""
    what: str = "flush"  # flush | release | badge_sync
    kind: Kind = attrs.field(default=Kind.MESSAGE, order=False)
    message: str | None = attrs.field(default=None, order=False)
    message_seq: int = attrs.field(default=0, order=False)
    target: str | None = attrs.field(default=None, order=False)
    seq: int | None = attrs.field(default=None, order=False)


class WorldFacts(Protocol):
    """The host's facts: people, channels, threads, rights, devices, presence, runs."""

    def user(self, user: str) -> UserInfo | None:
        """Return a person, or ``None`` when unknown."""

    def thread(self, thread: str) -> ThreadInfo | None:
        """Return a thread, or ``None`` when unknown."""

    def channel(self, channel: str) -> ChannelInfo | None:
        """Return a channel, or ``None`` when unknown."""

    def readers(self, channel: str) -> Sequence[str]:
        """Return the active humans who can read a channel: ascending by code point, each once.

        A superset is allowed (`allowed` decides per thread), but only of active humans: the
        pipeline takes them as message candidates (S1) without looking each one up again.
        """

    def allowed(self, user: str, thread: str) -> bool:
        """Tell whether a person may read a thread now (D2)."""

    def read_seq(self, user: str, thread: str) -> int:
        """Return a person's read position in a thread (0 when never read).

        Their last ``read_state.updated`` of the thread, moved up to each later message of
        their own (B3: their own messages are read).
        """

    def unread_mentions(self, user: str, thread: str, after: int | None = None) -> int:
        """Return how many mentions of a person in a thread are unread.

        ``after``: count those after this read position instead of the person's own (B2: the
        mentions a read leaves unread); the thread's unread floor applies either way.
        """

    def uncounted_between(self, thread: str, after: int, upto: int) -> int:
        """Return how many run anchors and system messages of a thread have a ``thread_seq``
        in ``(after, upto]`` (B1a: they never count in a flush count, D8)."""

    def badge_threads(self, user: str) -> Iterable[str]:
        """Return the threads that may count for a person's badge (B1), each once.

        At least every thread the person can read that holds messages and could count: an
        unread mention, effective level ``all`` or a DM channel. More is allowed (the pipeline
        checks each with `notify_core.hints.badge.counts_for_badge`), e.g. every readable thread.
        """

    def devices(self, user: str) -> tuple[Device, ...]:
        """Return a person's active devices."""

    def connections(self, user: str) -> tuple[Connection, ...]:
        """Return a person's live connections."""

    def push_devices(self, user: str) -> tuple[str, ...]:
        """Return the active mobile devices of a person with a push registration."""

    def during_run(self, thread: str, agent: str) -> bool:
        """Tell whether an agent message now would be during a run (S2), by log order."""

    def last_agent_message(self, run: str) -> tuple[str, int] | None:
        """Return the last agent message of a run and its thread position (S3)."""

    def record(self, event: Event) -> None:
        """Take note of an event that changes the facts (a no-op where the host keeps them)."""


class PreferenceFacts(Protocol):
    """People's notification preferences, read in batches."""

    def level_facts(self, thread: str, users: Sequence[str]) -> dict[str, LevelFacts]:
        """Return the L3 facts of many people for one thread."""

    def quiet_rules(self, users: Sequence[str]) -> dict[str, tuple[QuietRule, ...]]:
        """Return the quiet rules of many people (absent people have none)."""

    def switches(self, users: Sequence[str]) -> dict[str, Switches]:
        """Return the switches of many people (absent people have none set)."""

    def follow(self, user: str, thread: str) -> bool:
        """Give a person a row ``all`` for a thread unless one exists (S5); True if inserted."""


class Schedule(Protocol):
    """Windows and due work (windows, delayed pushes, badge syncs)."""

    def window(self, user: str, thread: str) -> Window | None:
        """Return a person's window on a thread, if one is open or not yet flushed."""

    def open_window(self, user: str, thread: str, end: datetime) -> None:
        """Open a window and schedule its flush at ``end``."""

    def collect(self, user: str, thread: str) -> None:
        """Count one more collected ``message`` in the open window."""

    def close_window(self, user: str, thread: str) -> None:
        """Forget a window (at its flush)."""

    def schedule(self, due: Due) -> None:
        """Schedule work."""

    def pop_due(self, until: datetime) -> Due | None:
        """Take the first work due at or before ``until``, in `Due` order."""

    def next_due(self) -> datetime | None:
        """Return when the first pending work comes due."""

    def badge_sync(self, user: str) -> tuple[datetime | None, bool]:
        """Return the last badge sync of a person and whether one is pending."""

    def set_badge_sync(self, user: str, last: datetime | None, pending: bool) -> None:
        """Record a person's last badge sync and whether one is pending."""
