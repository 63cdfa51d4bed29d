"""One transaction of a worker (`Session`) and what the pipeline's ports share of it.

The ports of `notify_core.hints.ports` on PostgreSQL (`PgWorld`, `PgPreferences`, `PgSchedule`)
answer from the caches of one `Session`: the facts of the candidates of one fan-out, or of one
page of due work, loaded at once so that a fan-out costs a constant number of queries.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime
from typing import Final

import attrs

from notify_core.hints.decide import Connection, Device, Switches
from notify_core.hints.levels import LevelFacts, TargetKind
from notify_core.hints.ports import ChannelInfo, ThreadInfo, UserInfo, Window
from notify_core.hints.quiet import QuietRule
from notify_core.records import PreferenceRecord
from notify_pg.db.seam import Conn
from notify_pg.stores.events import NewEvent
from notify_pg.stores.ports import NotificationPath

__all__ = ["ADMIN_ENABLED_KEY", "DUE_PAGE", "INPUT_NEEDED_KEY", "Session", "as_utc", "thread_path"]


#: The personal switches the pipeline reads (D3, D7).
ADMIN_ENABLED_KEY: Final = "notify.admin_enabled"
INPUT_NEEDED_KEY: Final = "notify.input_needed_breaks_quiet_hours"

#: Due work a round claims per page (one query per table) and prefetches the facts of; held
#: rows are skipped (other workers run them).
DUE_PAGE: Final = 100


@attrs.define
class Session:
    """What the ports of one transaction share: the connection, the log position, caches.

    Args:
        conn: the connection whose transaction the ports run in.
        position: the ``seq`` of the event being handled; facts read from the log are those
            before it. ``None`` for due work outside an event: then the host's current facts.
        now: the event's time (the time of events the pipeline appends while handling it).
    """

    conn: Conn
    position: int | None = None
    now: datetime | None = None
    batch: tuple[str, ...] = ()
    users: dict[str, UserInfo | None] = attrs.field(factory=dict)
    threads: dict[str, ThreadInfo | None] = attrs.field(factory=dict)
    channels: dict[str, ChannelInfo | None] = attrs.field(factory=dict)
    allowed: dict[tuple[str, str], bool] = attrs.field(factory=dict)
    devices: dict[str, tuple[Device, ...]] = attrs.field(factory=dict)
    connections: dict[str, tuple[Connection, ...]] = attrs.field(factory=dict)
    windows: dict[tuple[str, str], Window | None] = attrs.field(factory=dict)
    read: dict[tuple[str, str], int] = attrs.field(factory=dict)
    mentions: dict[tuple[str, str], int] = attrs.field(factory=dict)
    levels: dict[tuple[str, str], LevelFacts] = attrs.field(factory=dict)
    #: Per person, the threads of the badge (`PgWorld.badge_threads`).
    badge: dict[str, list[str]] = attrs.field(factory=dict)
    quiet: dict[str, tuple[QuietRule, ...]] = attrs.field(factory=dict)
    #: Per person, their preference records in recording order (read with the quiet rules;
    #: the record in effect at a decision is found among them, M1).
    records: dict[str, tuple[PreferenceRecord, ...]] = attrs.field(factory=dict)
    switches: dict[str, Switches | None] = attrs.field(factory=dict)
    registered: dict[str, frozenset[str]] = attrs.field(factory=dict)
    uncounted: dict[tuple[str, int, int], int] = attrs.field(factory=dict)
    #: Per loaded thread, its notification path (`thread_path`; a badge asks per person).
    paths: dict[str, NotificationPath | None] = attrs.field(factory=dict)
    #: Per channel, the host's readers (`PgWorld.readers`, before the partition filter).
    readers: dict[str, list[str]] = attrs.field(factory=dict)
    #: Whether `at` keeps the host's facts for the next event (a consumer's batch): see `at`.
    keep_host_facts: bool = False
    #: The log's head + 1 (the position due work outside an event reads the log before).
    head: int | None = None
    #: Events the pipeline appends (following), appended at the end of the transaction.
    appends: list[NewEvent] = attrs.field(factory=list)
    #: ``after_seq`` of the badge syncs popped in this transaction (for their cleared list).
    synced: dict[str, int | None] = attrs.field(factory=dict)
    #: Push deliveries per person and local day (M4): as read, plus those of this
    #: transaction; kept over `forget` (they are the transaction's own writes).
    push_days: dict[tuple[str, date], int] = attrs.field(factory=dict)
    #: The push deliveries this transaction counted, written at its end (`push_day_counts`).
    push_days_added: Counter[tuple[str, date]] = attrs.field(factory=Counter)
    #: The record each person had in effect at each decision instant asked about (M6: the
    #: record a hint left with no route names in ``push_holds``); kept over `forget`.
    record_at: dict[tuple[str, datetime], str] = attrs.field(factory=dict)
    #: The ``push_holds`` rows of this transaction, written at its end.
    holds: list[dict[str, object]] = attrs.field(factory=list)

    def at(self, position: int | None, now: datetime | None) -> None:
        """Move to another event (or to due work) and forget what was cached.

        With ``keep_host_facts`` (a consumer's batch) only what depends on the log position is
        forgotten: read positions, mentions, badges, uncounted messages, live connections.
        The host's facts (people, places, read rights, devices, registrations, settings,
        quiet rules) stay for the batch: every event of the batch was committed, with the
        host's change that came with it, before the batch read its page, so the facts read
        at its first event are at least as new as any of its events (as when the batch runs
        a little earlier). What the batch itself writes is kept in step by its writer:
        windows by `PgSchedule` (write-through), level facts by `PgPreferences.follow`
        (the followed pair is dropped). A page of due work still forgets everything.
        """
        self.position, self.now = position, now
        self.refresh()

    def refresh(self) -> None:
        """Forget what must be read anew for another event or page of due work: everything,
        or with ``keep_host_facts`` what depends on the log position (`at`)."""
        if not self.keep_host_facts:
            self.forget()
            return
        self.batch = ()
        self.head = None
        for cache in (self.read, self.mentions, self.badge, self.uncounted, self.connections):
            cache.clear()

    def forget(self) -> None:
        """Drop every cache (host facts may have changed since they were read)."""
        self.batch = ()
        self.head = None
        for cache in (
            self.users,
            self.threads,
            self.channels,
            self.allowed,
            self.devices,
            self.connections,
            self.windows,
            self.read,
            self.mentions,
            self.levels,
            self.badge,
            self.quiet,
            self.records,
            self.switches,
            self.registered,
            self.uncounted,
            self.paths,
            self.readers,
        ):
            cache.clear()

    def people(self, user: str) -> list[str]:
        """Return whom to load when ``user`` is asked for: the whole batch if they are in it."""
        return list(self.batch) if user in self.batch else [user]


def thread_path(session: Session, thread: str) -> NotificationPath | None:
    """The path of a thread whose facts the session holds (``None``: not loaded, or the thread
    or its channel is unknown): the host's `StructurePort.notification_path` of it. Kept per
    thread while the thread is loaded (the badges of a push round ask once per person)."""
    paths = session.paths
    if thread in paths:
        return paths[thread]
    info = session.threads.get(thread)
    channel = session.channels.get(info.channel) if info is not None else None
    if channel is None:
        return None
    path = paths[thread] = NotificationPath(
        kind=TargetKind.THREAD,
        space_id=channel.space,
        channel_id=channel.id,
        thread_id=thread,
        channel_kind=channel.kind,
        channel_default=channel.default_level,
    )
    return path


def as_utc(value: datetime) -> datetime:
    """``value`` in UTC (the tables and the core compare instants in UTC)."""
    return value.astimezone(UTC)
