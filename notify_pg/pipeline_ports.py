"""The ports of `notify_core.ports` on PostgreSQL: the same `Pipeline`, other stores.

`notify_core.pipeline.Pipeline` is written once against three small protocols. This module
implements them for one transaction of a worker (a `Session`):

- `PgWorld` (`WorldFacts`): the host's facts through `notify_pg.ports.PipelineHostPorts`;
  agent runs (S2, S3) and, while an event is handled, read positions (B2) from ``event_log``
  by log order, as of just before the event;
- `PgPreferences` (`PreferenceFacts`): `notify_pg.facts.FactsReader` for levels and quiet
  rules, the host's settings for the switches, and following (S5) as insert-if-absent that
  appends one ``notification_pref.updated`` only when it inserted;
- `PgSchedule` (`Schedule`): the due-work tables ``windows``, ``delayed_releases`` and
  ``badge_syncs``, claimed with ``FOR UPDATE SKIP LOCKED`` by due-work rounds and with
  ``FOR UPDATE`` (waiting) by consumer rounds, so due work at or before an event always runs
  before it, as in a replay; the round of one recipient partition sees only its recipients'
  due work (``{schema}.partition_of``).

The pipeline asks per person; the ports answer from caches that they fill for all candidates
of a fan-out at once (the people of the last batched read), so a fan-out costs a constant
number of queries. Due work is claimed a page at a time and the facts of the whole page are
loaded at once (`PgWorld.prefetch_due`), the badges of a push round likewise
(`PgWorld.prefetch_badges`). Caches live for one event or one page of due work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import attrs

from notify_core.decide import MOBILE, Connection, Device, Switches
from notify_core.events import Event
from notify_core.kinds import Kind, RunState, run_active
from notify_core.levels import Level, LevelFacts, Preference, Target, TargetKind
from notify_core.partitions import Partition, Partitions
from notify_core.ports import ChannelInfo, Due, ThreadInfo, UserInfo, Window
from notify_core.quiet import QuietRule
from notify_pg.errors import NotFound
from notify_pg.events import NewEvent
from notify_pg.facts import DEFAULT_LEVEL_KEY, FactsReader
from notify_pg.ports import BatchFactsPort, NotificationPath, PipelineHostPorts
from notify_pg.preferences import PreferenceRepository
from notify_pg.seam import Conn, Seam

__all__ = ["PgPreferences", "PgSchedule", "PgWorld", "Session"]

_log = logging.getLogger("notify_pg")

#: The personal switches the pipeline reads (D3, D7).
ADMIN_ENABLED_KEY: Final = "notify.admin_enabled"
INPUT_NEEDED_KEY: Final = "notify.input_needed_breaks_quiet_hours"

#: Due work a round claims per page (one query per table) and prefetches the facts of; held
#: rows are skipped (other workers run them).
_DUE_PAGE: Final = 100


@attrs.define
class Session:
    """What the ports of one transaction share: the connection, the log position, caches.

    Args:
        conn: the connection whose transaction the round runs in.
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
    switches: dict[str, Switches | None] = attrs.field(factory=dict)
    registered: dict[str, frozenset[str]] = attrs.field(factory=dict)
    uncounted: dict[tuple[str, int, int], int] = attrs.field(factory=dict)
    #: Per loaded thread, its notification path (`_thread_path`; a badge asks per person).
    paths: dict[str, NotificationPath | None] = attrs.field(factory=dict)
    #: The log's head + 1 (the position due work outside an event reads the log before).
    head: int | None = None
    #: Events the pipeline appends (following), appended at the end of the round.
    appends: list[NewEvent] = attrs.field(factory=list)
    #: ``after_seq`` of the badge syncs popped in this transaction (for their cleared list).
    synced: dict[str, int | None] = attrs.field(factory=dict)

    def at(self, position: int | None, now: datetime | None) -> None:
        """Move to another event (or to due work) and forget what was cached."""
        self.position, self.now = position, now
        self.forget()

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
            self.switches,
            self.registered,
            self.uncounted,
            self.paths,
        ):
            cache.clear()

    def people(self, user: str) -> list[str]:
        """Return whom to load when ``user`` is asked for: the whole batch if they are in it."""
        return list(self.batch) if user in self.batch else [user]


class PgWorld:
    """`notify_core.ports.WorldFacts` on the host ports and the event log.

    Args:
        session: the transaction's session.
        host: the host's ports.
        schema: the library's schema (for ``event_log`` and ``push_registrations``).
        facts: the batched reader of level facts (for the badge's threads).
        live: whether ``gateway`` routes can be delivered (the worker has a sink). Without
            that, live routes fail closed: nobody's connections are read, so no device counts
            as live, nobody as active in a thread (D4), and every active device gets ``push``
            (D5), as with no gateway at all (seed 001 note 10).
        owns: the recipients of a partitioned consumer round (the pipeline's ``owns``):
            `readers` answers only those, so a round of one partition does not load the
            people of the others (the pipeline would drop them from the fan-out anyway).
    """

    def __init__(
        self,
        session: Session,
        host: PipelineHostPorts,
        schema: str,
        facts: FactsReader | None = None,
        *,
        live: bool = True,
        owns: Callable[[str], bool] | None = None,
    ) -> None:
        self._s = session
        self._host = host
        self._seam = Seam("notify_pg", schema)
        self._facts = facts
        self._live = live
        self._owns = owns

    # --- people, places ----------------------------------------------------------------------

    def _load_users(self, people: Iterable[str]) -> None:
        s = self._s
        missing = [p for p in dict.fromkeys(people) if p not in s.users]
        if missing:
            found = self._host.users(s.conn, missing)
            for person in missing:
                s.users[person] = found.get(person)

    def user(self, user: str) -> UserInfo | None:
        """Return a person, or ``None`` when unknown."""
        s = self._s
        if user not in s.users:
            self._load_users(s.people(user))
        return s.users.get(user)

    def thread(self, thread: str) -> ThreadInfo | None:
        """Return a thread with its positions, or ``None`` when unknown."""
        s = self._s
        if thread not in s.threads:
            s.threads[thread] = self._host.threads(s.conn, [thread]).get(thread)
        return s.threads[thread]

    def channel(self, channel: str) -> ChannelInfo | None:
        """Return a channel, or ``None`` when unknown."""
        s = self._s
        if channel not in s.channels:
            s.channels[channel] = self._host.channels(s.conn, [channel]).get(channel)
        return s.channels[channel]

    def readers(self, channel: str) -> Sequence[str]:
        """Return the active humans who can read a channel, ascending by code point (of the
        owned recipients only, with ``owns``).

        Their facts are loaded in one go. Sorted here, not by SQL: a database collation may
        order ids otherwise than the in-memory store, and hints of one event go by recipient.
        """
        readers = self._host.channel_readers(self._s.conn, channel)
        if self._owns is not None:
            readers = list(filter(self._owns, readers))
        self._load_users(readers)
        users = self._s.users
        return sorted(
            {p for p in readers if (info := users.get(p)) is not None and info.active_human}
        )

    def allowed(self, user: str, thread: str) -> bool:
        """Tell whether a person may read a thread now (D2), for the whole batch at once."""
        s = self._s
        key = (user, thread)
        if key not in s.allowed:
            people = [p for p in s.people(user) if (p, thread) not in s.allowed]
            readers = self._host.thread_readers(s.conn, thread, people)
            for person in people:
                s.allowed[(person, thread)] = person in readers
        return s.allowed[key]

    # --- positions ---------------------------------------------------------------------------

    def read_seq(self, user: str, thread: str) -> int:
        """Return a person's read position in a thread (0 when never read).

        While an event is handled: the position of the person's last ``read_state.updated``
        of the thread before the event, moved up to their own later messages (B3), as of just
        before the event (the facts before it, B2). Otherwise the host's.
        """
        s = self._s
        key = (user, thread)
        if key not in s.read:
            if s.position is not None:
                row = self._seam.one(
                    s.conn,
                    "read_position_before",
                    {"user_id": user, "thread": thread, "before": s.position},
                )
                s.read[key] = int(row[0]) if row is not None else 0
            else:
                s.read[key] = self._host.read_positions(s.conn, user, [thread]).get(thread, 0)
        return s.read[key]

    def unread_mentions(self, user: str, thread: str, after: int | None = None) -> int:
        """Return how many mentions of a person in a thread lie after the read position (or
        after ``after`` instead) and the thread's unread floor."""
        if after is not None:
            info = self.thread(thread)
            floor = max(after, info.unread_floor_seq if info else 0)
            found = self._host.unread_mentions(self._s.conn, user, {thread: floor})
            return found.get(thread, 0)
        key = (user, thread)
        if key not in self._s.mentions:
            info = self.thread(thread)
            floor = max(self.read_seq(user, thread), info.unread_floor_seq if info else 0)
            found = self._host.unread_mentions(self._s.conn, user, {thread: floor})
            self._s.mentions[key] = found.get(thread, 0)
        return self._s.mentions[key]

    def uncounted_between(self, thread: str, after: int, upto: int) -> int:
        """Return how many run anchors and system messages of a thread have a position in
        ``(after, upto]`` (B1a), from the log before the event (or all of it for due work)."""
        if upto <= after:
            return 0
        cached = self._s.uncounted.get((thread, after, upto))
        if cached is not None:
            return cached
        row = self._seam.one(
            self._s.conn,
            "uncounted_between",
            {"thread": thread, "after": after, "upto": upto, "before": self._before()},
        )
        return int(row[0]) if row is not None else 0

    def prefetch_badges(self, users: Iterable[str]) -> None:
        """Load what the badges of many people read, with a few queries for all of them.

        `badge_threads` and the facts the badge reads of each thread then come from the
        session's caches. With a host that has the batched reads
        (`notify_pg.ports.BatchFactsPort`) and no event being handled, the number of
        queries does not grow with the people; otherwise per person as `badge_threads`.
        """
        s = self._s
        people = [p for p in dict.fromkeys(users) if p not in s.badge]
        host = self._host
        if not people:
            return
        if not isinstance(host, BatchFactsPort) or s.position is not None:
            for person in people:
                self.badge_threads(person)
            return
        self._load_users(people)
        found = host.badge_threads_of(s.conn, people)
        pairs: list[tuple[str, str]] = []
        for person in people:
            threads = list(found.get(person, ()))
            s.badge[person] = threads
            info = s.users.get(person)
            active = info is not None and info.active
            for thread in threads:
                s.allowed.setdefault((person, thread), active)
                pairs.append((person, thread))
        if not pairs:
            return
        self._load_places(list(dict.fromkeys(t for _p, t in pairs)))
        unread = [k for k in pairs if k not in s.read]
        positions = host.read_positions_of(s.conn, unread) if unread else {}
        for key in unread:
            s.read[key] = positions.get(key, 0)
        floors = {}
        for key in pairs:
            if key not in s.mentions:
                place = s.threads.get(key[1])
                floors[key] = max(s.read[key], place.unread_floor_seq if place else 0)
        counts = host.unread_mentions_of(s.conn, floors) if floors else {}
        for key in floors:
            s.mentions[key] = counts.get(key, 0)
        if self._facts is None:
            return
        paths = {key: path for key in pairs if key not in s.levels and (path := self._path(key[1]))}
        s.levels.update(self._facts.pairs_level_facts(s.conn, paths))

    def prefetch_due(self, dues: Sequence[Due], prefs: PgPreferences) -> None:
        """Load the facts a page of due work reads, with a few queries for all of it.

        Flushes, releases and badge syncs then read the session's caches: the people, their
        threads and channels, the read rights and read positions, windows, devices and
        connections, level facts, quiet rules and switches, the uncounted messages of the
        flushes (B1a) and what badge syncs read. A host without the batched reads
        (`notify_pg.ports.BatchFactsPort`) is asked per thread or person instead.
        """
        s, host = self._s, self._host
        people = list(dict.fromkeys(d.recipient for d in dues))
        s.batch = tuple(people)
        self._load_users(people)
        pairs = list(dict.fromkeys((d.recipient, d.thread) for d in dues if d.thread))
        self._load_places(list(dict.fromkeys(t for _p, t in pairs)))
        self.prefetch_allowed(pairs)
        self._load_read(pairs)
        self._load_windows(pairs)
        if people:
            self.devices(people[0])
            self.connections(people[0])
        settings = host.settings(
            s.conn, people, [DEFAULT_LEVEL_KEY, ADMIN_ENABLED_KEY, INPUT_NEEDED_KEY]
        )
        prefs.prefetch(people, settings)
        if self._facts is not None:
            paths = {
                key: path
                for key in pairs
                if key not in s.levels and (path := self._path(key[1])) is not None
            }
            s.levels.update(self._facts.pairs_level_facts(s.conn, paths, settings))
        self._load_uncounted([d for d in dues if d.what == "flush"])
        syncs = list(dict.fromkeys(d.recipient for d in dues if d.what == "badge_sync"))
        if syncs:
            rows = self._seam.all(s.conn, "active_registrations", {"user_ids": syncs})
            for person in syncs:
                s.registered[person] = frozenset(r[2] for r in rows if r[1] == person)
            self.prefetch_badges(syncs)

    def prefetch_allowed(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Load the read rights (D2) of many (person, thread) pairs at once."""
        s, host = self._s, self._host
        missing = [k for k in pairs if k not in s.allowed]
        if not missing:
            return
        if isinstance(host, BatchFactsPort):
            readers = host.thread_readers_of(s.conn, missing)
            for key in missing:
                s.allowed[key] = key in readers
            return
        by_thread: dict[str, list[str]] = {}
        for person, thread in missing:
            by_thread.setdefault(thread, []).append(person)
        for thread, persons in by_thread.items():
            found = host.thread_readers(s.conn, thread, persons)
            for person in persons:
                s.allowed[(person, thread)] = person in found

    def _load_read(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Read positions of many (person, thread) pairs (from the log while an event is
        handled, as `read_seq`)."""
        s, host = self._s, self._host
        missing = [k for k in pairs if k not in s.read]
        if not missing:
            return
        users, threads = [u for u, _t in missing], [t for _u, t in missing]
        found: dict[tuple[str, str], int] = {}
        if s.position is not None:
            rows = self._seam.all(
                s.conn,
                "read_positions_before",
                {"user_ids": users, "threads": threads, "before": s.position},
            )
            found = {(u, t): int(seq) for u, t, seq in rows}
        elif isinstance(host, BatchFactsPort):
            found = dict(host.read_positions_of(s.conn, missing))
        else:
            for person, thread in missing:
                found[(person, thread)] = self.read_seq(person, thread)
        for key in missing:
            s.read[key] = found.get(key, 0)

    def _load_windows(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Windows of many (person, thread) pairs (the claimed flushes' are known)."""
        s = self._s
        missing = [k for k in pairs if k not in s.windows]
        if not missing:
            return
        rows = self._seam.all(
            s.conn,
            "windows_of_pairs",
            {"recipients": [u for u, _t in missing], "threads": [t for _u, t in missing]},
        )
        found = {(r, t): Window(end=_utc(end), collected=n) for r, t, end, n in rows}
        for key in missing:
            s.windows[key] = found.get(key)

    def _load_uncounted(self, flushes: Sequence[Due]) -> None:
        """The uncounted messages (B1a) that the flushes of a page will ask for."""
        s = self._s
        ranges: dict[tuple[str, int, int], None] = {}
        for due in flushes:
            window = s.windows.get((due.recipient, due.thread))
            info = s.threads.get(due.thread)
            if window is None or window.collected == 0 or info is None:
                continue
            read = max(s.read.get((due.recipient, due.thread), 0), info.unread_floor_seq)
            if info.last_message_seq > read:
                ranges[(due.thread, read, info.last_message_seq)] = None
        todo = [r for r in ranges if r not in s.uncounted]
        if not todo:
            return
        rows = self._seam.all(
            s.conn,
            "uncounted_between_many",
            {
                "threads": [t for t, _a, _u in todo],
                "afters": [a for _t, a, _u in todo],
                "uptos": [u for _t, _a, u in todo],
                "before": self._before(),
            },
        )
        for thread, after, upto, count in rows:
            s.uncounted[(thread, int(after), int(upto))] = int(count)

    def _load_places(self, threads: Sequence[str]) -> None:
        """Load the threads and their channels that the session does not know yet."""
        s = self._s
        missing = [t for t in threads if t not in s.threads]
        if missing:
            found = self._host.threads(s.conn, missing)
            for thread in missing:
                s.threads[thread] = found.get(thread)
        channels = {i.channel for t in threads if (i := s.threads.get(t)) is not None}
        missing_channels = [c for c in sorted(channels) if c not in s.channels]
        if missing_channels:
            found_channels = self._host.channels(s.conn, missing_channels)
            for channel in missing_channels:
                s.channels[channel] = found_channels.get(channel)

    def _path(self, thread: str) -> NotificationPath | None:
        """The path of a loaded thread (``None``: the thread or its channel is unknown)."""
        return _thread_path(self._s, thread)

    def badge_threads(self, user: str) -> Iterable[str]:
        """Return the threads with messages a person can read; their facts are loaded at once."""
        s = self._s
        cached = s.badge.get(user)
        if cached is not None:
            return list(cached)
        threads = list(self._host.badge_threads(s.conn, user))
        s.badge[user] = threads
        if not threads:
            return list(threads)
        self._load_places(threads)
        # The port answers the threads the person can read now, so each is allowed exactly
        # when the person is active (D2); no read check per thread.
        info = self.user(user)
        active = info is not None and info.active
        for thread in threads:
            s.allowed.setdefault((user, thread), active)
        self._prefetch_badge(user, threads)
        return list(threads)

    def _prefetch_badge(self, user: str, threads: list[str]) -> None:
        """Load what the badge reads of each thread with a few queries for all of them."""
        s = self._s
        if s.position is None:
            missing = [t for t in threads if (user, t) not in s.read]
            positions = self._host.read_positions(s.conn, user, missing) if missing else {}
            for thread in missing:
                s.read[(user, thread)] = positions.get(thread, 0)
        floors = {}
        for thread in threads:
            if (user, thread) not in s.mentions:
                info = s.threads.get(thread)
                floors[thread] = max(
                    self.read_seq(user, thread), info.unread_floor_seq if info else 0
                )
        if floors:
            counts = self._host.unread_mentions(s.conn, user, floors)
            for thread in floors:
                s.mentions[(user, thread)] = counts.get(thread, 0)
        if self._facts is None:
            return
        paths = {
            thread: path
            for thread in threads
            if (user, thread) not in s.levels and (path := self._path(thread)) is not None
        }
        for thread, facts in self._facts.user_level_facts(s.conn, user, paths).items():
            s.levels[(user, thread)] = facts

    # --- devices, presence -------------------------------------------------------------------

    def devices(self, user: str) -> tuple[Device, ...]:
        """Return a person's active devices, ordered by id."""
        s = self._s
        if user not in s.devices:
            people = [p for p in s.people(user) if p not in s.devices]
            found = self._host.active_devices(s.conn, people)
            for person in people:
                s.devices[person] = found.get(person, ())
        return s.devices[user]

    def connections(self, user: str) -> tuple[Connection, ...]:
        """Return the live connections of a person's active devices (none when ``gateway``
        routes cannot be delivered)."""
        if not self._live:
            return ()
        s = self._s
        if user not in s.connections:
            people = [p for p in s.people(user) if p not in s.connections]
            found = self._host.connections(s.conn, people)
            for person in people:
                s.connections[person] = found.get(person, ())
        return s.connections[user]

    def push_devices(self, user: str) -> tuple[str, ...]:
        """Return the active mobile devices of a person with an active push registration."""
        s = self._s
        registered = s.registered.get(user)
        if registered is None:
            rows = self._seam.all(s.conn, "active_registrations", {"user_ids": [user]})
            registered = s.registered[user] = frozenset(row[2] for row in rows)
        return tuple(
            d.id for d in self.devices(user) if d.platform in MOBILE and d.id in registered
        )

    # --- runs, by log order (S2, S3) ---------------------------------------------------------

    def _before(self) -> int:
        s = self._s
        if s.position is not None:
            return s.position
        if s.head is None:
            row = self._seam.one(s.conn, "head_seq")
            s.head = int(row[0]) + 1 if row is not None else 1
        return s.head

    def during_run(self, thread: str, agent: str) -> bool:
        """S2: the newest run anchor of the thread before the event belongs to a run of this
        agent whose last state change before the event is active."""
        row = self._seam.one(
            self._s.conn, "newest_anchor_run", {"thread": thread, "before": self._before()}
        )
        if row is None:
            return False
        run_agent, state = row
        return bool(run_agent == agent and run_active(RunState(state)))

    def last_agent_message(self, run: str) -> tuple[str, int] | None:
        """S3: the run agent's newest message in the run's thread before the event, if it lies
        after the run's anchor."""
        before = self._before()
        row = self._seam.one(self._s.conn, "run_facts", {"run": run, "before": before})
        if row is None:
            return None
        anchor_thread, anchor_seq, agent, first_thread = row
        thread = anchor_thread if anchor_thread is not None else first_thread
        if thread is None or agent is None:
            return None
        found = self._seam.one(
            self._s.conn,
            "newest_agent_message",
            {"thread": thread, "agent": agent, "before": before},
        )
        if found is None:
            return None
        message, seq = found
        return (message, int(seq)) if int(seq) > (anchor_seq or 0) else None

    def record(self, event: Event) -> None:
        """Nothing to record: the host keeps its facts, the log keeps the history."""


class PgPreferences:
    """`notify_core.ports.PreferenceFacts` on the library's tables and the host's settings.

    Args:
        session: the transaction's session.
        host: the host's ports.
        facts: the batched reader of levels and quiet rules.
        preferences: the preference repository (for following).
        instance_default: the instance default level (for threads the host does not know).
    """

    def __init__(
        self,
        session: Session,
        host: PipelineHostPorts,
        facts: FactsReader,
        preferences: PreferenceRepository,
        instance_default: Level,
    ) -> None:
        self._s = session
        self._host = host
        self._facts = facts
        self._preferences = preferences
        self._instance_default = instance_default

    def level_facts(self, thread: str, users: Sequence[str]) -> dict[str, LevelFacts]:
        """Return the L3 facts of many people for one thread; they become the current batch."""
        people = list(dict.fromkeys(users))
        if len(people) == 1 and (people[0], thread) in self._s.levels:
            return {people[0]: self._s.levels[(people[0], thread)]}
        s = self._s
        s.batch = tuple(people)
        # The fan-out reads the switches next: one host call for both (`switches`).
        settings = self._host.settings(
            s.conn, people, [DEFAULT_LEVEL_KEY, ADMIN_ENABLED_KEY, INPUT_NEEDED_KEY]
        )
        known = PgPreferences._switches_of(settings)
        for person in people:
            s.switches[person] = known.get(person)
        try:
            return self._facts.level_facts(
                s.conn, thread, people, path=_thread_path(s, thread), settings=settings
            )
        except NotFound:
            facts = LevelFacts(instance_default=self._instance_default)
            return dict.fromkeys(people, facts)

    def quiet_rules(self, users: Sequence[str]) -> dict[str, tuple[QuietRule, ...]]:
        """Return the enabled quiet rules of many people (people without rules are absent).

        The people become the current batch (threadless kinds read no level facts).
        """
        cache = self._s.quiet
        if all(person in cache for person in users):
            return {person: cache[person] for person in users if cache[person]}
        self._s.batch = tuple(dict.fromkeys(users))
        # The pipeline takes the person's zone from `UserInfo`: only the rules are read here.
        found = self._facts.quiet_rules(self._s.conn, users, zones=False)
        return {person: facts.rules for person, facts in found.items() if facts.rules}

    def prefetch(self, users: Sequence[str], settings: Mapping[str, Mapping[str, object]]) -> None:
        """Load the quiet rules of many people and their switches from ``settings`` (read
        with both switch keys): `quiet_rules` and `switches` of them then read no table."""
        s = self._s
        missing = [p for p in dict.fromkeys(users) if p not in s.quiet]
        if missing:
            found = self._facts.quiet_rules(s.conn, missing, zones=False)
            for person in missing:
                facts = found.get(person)
                s.quiet[person] = facts.rules if facts is not None else ()
        known = self._switches_of({p: settings.get(p, {}) for p in users})
        for person in users:
            s.switches[person] = known.get(person)

    def switches(self, users: Sequence[str]) -> dict[str, Switches]:
        """Return the switches of many people; a stored non-boolean counts as unset (D3, D7)."""
        cache = self._s.switches
        if all(person in cache for person in users):
            return {p: own for p in users if (own := cache[p]) is not None}
        stored = self._host.settings(self._s.conn, users, [ADMIN_ENABLED_KEY, INPUT_NEEDED_KEY])
        return self._switches_of(stored)

    @staticmethod
    def _switches_of(stored: Mapping[str, Mapping[str, object]]) -> dict[str, Switches]:
        out = {}
        bad = 0
        for person, values in stored.items():
            admin = values.get(ADMIN_ENABLED_KEY)
            breaks = values.get(INPUT_NEEDED_KEY)
            bad += sum(v is not None and not isinstance(v, bool) for v in (admin, breaks))
            if admin is not None or breaks is not None:
                out[person] = Switches(
                    admin_enabled=admin if isinstance(admin, bool) else None,
                    input_needed_breaks_quiet_hours=breaks if isinstance(breaks, bool) else None,
                )
        if bad:
            # Seed 001 note 8: one warning, without the values and without the people's IDs.
            _log.warning("%d stored switch value(s) are not booleans; counted as unset", bad)
        return out

    def follow(self, user: str, thread: str) -> bool:
        """S5: a row ``all`` for the thread unless the person has one; True if inserted.

        An inserted row appends one ``notification_pref.updated`` in the round's transaction,
        with the time of the event being handled (`Session.appends`: the worker appends them
        at the end of the round, in order).
        """
        self._s.levels.pop((user, thread), None)
        stored = self._preferences.insert_if_absent(
            self._s.conn,
            user,
            Target(kind=TargetKind.THREAD, id=thread),
            Preference(level=Level.ALL),
            actor=user,
            occurred_at=self._s.now,
            defer=self._s.appends,
        )
        return stored is not None


class PgSchedule:
    """`notify_core.ports.Schedule` on the due-work tables.

    Args:
        session: the transaction's session.
        schema: the library's schema.
        wait: claim due work that another worker holds by waiting for it (consumer rounds:
            due work at or before an event runs first); otherwise skip it (due-work rounds).
        budget: the most due work `pop_due` hands out in this transaction (then ``None``).
        owns: the recipient partition (or partitions) of a partitioned consumer round: `pop_due` and
            `next_due` see only the due work of its recipients (filtered in SQL with
            ``{schema}.partition_of``), because the other partitions' consumers may still be
            behind and their work must wait for them. ``None``: all due work.
    """

    def __init__(
        self,
        session: Session,
        schema: str,
        *,
        wait: bool = False,
        budget: int | None = None,
        owns: Partition | Partitions | None = None,
    ) -> None:
        self._s = session
        self._seam = Seam("notify_pg", schema)
        self._wait = wait
        self.budget = budget
        # The partition's parameters of the filtered queries; empty: no filter.
        self._part: dict[str, int | list[int]] = {}
        if isinstance(owns, Partition):
            self._part = {"part_set": [owns.index], "parts": owns.count}
        elif owns is not None:
            self._part = {"part_set": list(owns.indices), "parts": owns.count}
        self.popped = 0
        self._pending: dict[tuple[str, str], int] = {}
        self._closes: dict[tuple[str, str], None] = {}
        self._handed: list[int] = []
        #: The claimed page of due work not handed out yet, in replay order, with the release's
        #: id or the badge sync's ``after_seq``; valid for one ``until``.
        self._page: list[tuple[Due, int | None]] = []
        self._page_until: datetime | None = None
        #: Loads the facts of a claimed page at once (set by the worker: `PgWorld.prefetch_due`).
        self.prefetch: Callable[[Sequence[Due]], None] | None = None
        #: Nothing of the owned partitions is due before this instant but what this transaction
        #: scheduled since it was read (`_cut` lowers it); ``None``: not known.
        self._idle_before: datetime | None = None
        self._opens: dict[tuple[str, str], datetime] = {}

    # --- windows -----------------------------------------------------------------------------

    def window(self, user: str, thread: str) -> Window | None:
        """Return a person's window on a thread, for the whole batch at once."""
        s = self._s
        key = (user, thread)
        if key not in s.windows:
            self.write_pending()
            people = [p for p in s.people(user) if (p, thread) not in s.windows]
            rows = self._seam.all(s.conn, "windows_of", {"thread": thread, "recipients": people})
            found = {r: Window(end=_utc(end), collected=n) for r, end, n in rows}
            for person in people:
                s.windows[(person, thread)] = found.get(person)
        return s.windows[key]

    def open_window(self, user: str, thread: str, end: datetime) -> None:
        """Open a window; its row is its flush, due at ``end``.

        Written with the other windows of the event in one statement (`write_pending`).
        """
        key = (user, thread)
        self._pending.pop(key, None)
        self._opens[key] = end
        self._s.windows[key] = Window(end=end)
        self._cut(end)

    def collect(self, user: str, thread: str) -> None:
        """Count one more collected ``message`` in the open window.

        The count is written with the other collects of the event in one statement
        (`write_pending`), before anything reads windows from the table again.
        """
        key = (user, thread)
        window = self.window(user, thread)
        if window is None:
            return
        self._s.windows[key] = Window(end=window.end, collected=window.collected + 1)
        self._pending[key] = self._pending.get(key, 0) + 1

    def write_pending(self) -> None:
        """Write the windows closed and opened, the collects counted and the releases handed
        out since the last write (one statement each)."""
        conn = self._s.conn
        if self._handed:
            self._seam.run(conn, "delete_releases", {"ids": self._handed})
            self._handed = []
        if self._closes:
            keys = list(self._closes)
            self._seam.run(
                conn,
                "close_windows",
                {"recipients": [r for r, _t in keys], "threads": [t for _r, t in keys]},
            )
            self._closes.clear()
        if self._opens:
            keys = list(self._opens)
            self._seam.run(
                conn,
                "open_windows",
                {
                    "recipients": [r for r, _t in keys],
                    "threads": [t for _r, t in keys],
                    "ends": [self._opens[k] for k in keys],
                },
            )
            self._opens.clear()
        if self._pending:
            keys = list(self._pending)
            self._seam.run(
                conn,
                "collect_windows",
                {
                    "recipients": [r for r, _t in keys],
                    "threads": [t for _r, t in keys],
                    "counts": [self._pending[k] for k in keys],
                },
            )
            self._pending.clear()

    def close_window(self, user: str, thread: str) -> None:
        """Forget a window (at its flush); deleted with the other closes (`write_pending`)."""
        key = (user, thread)
        self._pending.pop(key, None)
        self._opens.pop(key, None)
        self._closes[key] = None
        self._s.windows[key] = None

    # --- due work ----------------------------------------------------------------------------

    def schedule(self, due: Due) -> None:
        """Schedule a delayed release or the due time of a pending badge sync."""
        self._cut(due.at)
        if due.what == "release":
            self._seam.run(
                self._s.conn,
                "insert_release",
                {
                    "due_at": due.at,
                    "recipient": due.recipient,
                    "thread": due.thread,
                    "device": due.device,
                    "kind": due.kind.value,
                    "message": due.message,
                    "message_seq": due.message_seq,
                    "target": due.target,
                    "seq": due.seq,
                },
            )
        elif due.what == "badge_sync":
            params = {"recipient": due.recipient, "due_at": due.at}
            self._seam.run(self._s.conn, "schedule_badge_sync", params)
        else:
            raise ValueError(f"cannot schedule {due.what!r} work (windows schedule their flush)")

    def pop_due(self, until: datetime) -> Due | None:
        """Claim the first due work at or before ``until`` in replay order (of the owned
        partition only); ``None`` when none is due (or this transaction's budget is spent).

        Due work is claimed a page at a time (one statement per kind of work) and the facts of
        the whole page are loaded at once (`prefetch`); it is handed out one by one. Work that
        running the page schedules at or before ``until`` cuts the page where it would come
        (`_cut`): the rest is claimed again, after it.
        """
        if self.budget is not None and self.popped >= self.budget:
            return None
        if self._idle_before is not None and until < self._idle_before:
            return None
        if self._page_until != until:
            self._page.clear()
        if not self._page:
            # The page's writes go first: the next page is read from the tables.
            self.write_pending()
            if not self._fill(until):
                # Nothing due: nothing will be before the first pending work, but what this
                # round schedules (work that other workers' due rounds schedule for these
                # recipients comes from pending work, so no sooner than it).
                self._idle_before = self._first_pending()
            if not self._page:
                self._s.forget()  # what follows (the event) reads its own facts
                return None
        due, extra = self._page.pop(0)
        self.popped += 1
        if due.what == "release":
            assert extra is not None
            self._handed.append(extra)
        elif due.what == "badge_sync":
            self._s.synced[due.recipient] = extra
        return due

    def _first_pending(self) -> datetime:
        """When the first pending work of the owned partitions comes due (far away: none)."""
        return self.next_due() or datetime.max.replace(tzinfo=UTC)

    def _cut(self, at: datetime) -> None:
        """New due work at ``at``: the claimed work from ``at`` on must wait for it."""
        if self._idle_before is not None and at < self._idle_before:
            self._idle_before = at
        if self._page and self._page[-1][0].at >= at:
            self._page = [item for item in self._page if item[0].at < at]

    def _fill(self, until: datetime) -> bool:
        """Claim the next page of due work (see `pop_due`); False when nothing is due."""
        conn, mode = self._s.conn, "wait" if self._wait else "skip"
        query = "due_candidates_part" if self._part else "due_candidates"
        limit = _DUE_PAGE
        if self.budget is not None:
            limit = min(limit, self.budget - self.popped)
        params = {"until": until, "limit": limit, **self._part}
        while True:
            rows = self._seam.all(conn, query, params)
            if not rows:
                return False
            # The facts of the page are read anew (host facts may have changed meanwhile).
            self._s.forget()
            page = self._claim_page(mode, until, rows)
            if mode == "wait" and len(page) < len(rows):
                continue  # some went while we waited for them: look again from the start
            # Skip mode: a page held by other workers leaves nothing; the next round retries.
            self._page, self._page_until = page, until
            if page and self.prefetch is not None:
                self.prefetch([due for due, _extra in page])
            return True

    def _claim_page(
        self, mode: str, until: datetime, rows: Sequence[tuple[Any, ...]]
    ) -> list[tuple[Due, int | None]]:
        """Claim the candidates (one statement per kind); return those claimed, in order."""
        conn = self._s.conn
        flushes = [(r[1], r[2]) for r in rows if r[4] == "flush"]
        releases = [int(r[5]) for r in rows if r[4] == "release"]
        syncs = [r[1] for r in rows if r[4] == "badge_sync"]
        windows: dict[tuple[str, str], Window] = {}
        if flushes:
            found = self._seam.all(
                conn,
                f"claim_windows_{mode}",
                {
                    "recipients": [r for r, _t in flushes],
                    "threads": [t for _r, t in flushes],
                    "until": until,
                },
            )
            windows = {(r, t): Window(end=_utc(end), collected=n) for r, t, end, n in found}
        claimed_releases: dict[int, Due] = {}
        if releases:
            found = self._seam.all(
                conn, f"claim_releases_{mode}", {"ids": releases, "until": until}
            )
            for ident, due_at, recipient, thread, device, kind, message, mseq, target, seq in found:
                claimed_releases[int(ident)] = Due(
                    at=_utc(due_at),
                    recipient=recipient,
                    thread=thread,
                    device=device,
                    what="release",
                    kind=Kind(kind),
                    message=message,
                    message_seq=mseq,
                    target=target,
                    seq=seq,
                )
        claimed_syncs: dict[str, tuple[datetime, int | None]] = {}
        if syncs:
            found = self._seam.all(
                conn, f"claim_badge_syncs_{mode}", {"recipients": syncs, "until": until}
            )
            claimed_syncs = {r: (_utc(at), after) for r, at, after in found}
        page: list[tuple[Due, int | None]] = []
        for _at, recipient, thread, _device, what, ident in rows:
            if what == "flush":
                window = windows.get((recipient, thread))
                if window is not None:
                    # The flush reads the window it claimed (`Pipeline._flush`).
                    self._s.windows[(recipient, thread)] = window
                    page.append(
                        (Due(at=window.end, recipient=recipient, thread=thread, what="flush"), None)
                    )
            elif what == "release":
                release = claimed_releases.get(int(ident))
                if release is not None:
                    page.append((release, int(ident)))
            else:
                sync = claimed_syncs.get(recipient)
                if sync is not None:
                    due = Due(at=sync[0], recipient=recipient, what="badge_sync", kind=Kind.SYNC)
                    page.append((due, sync[1]))
        return page

    def next_due(self) -> datetime | None:
        """Return when the first pending work (of the owned partition) comes due."""
        self.write_pending()
        if self._part:
            row = self._seam.one(self._s.conn, "next_due_part", self._part)
        else:
            row = self._seam.one(self._s.conn, "next_due")
        return None if row is None or row[0] is None else _utc(row[0])

    def badge_sync(self, user: str) -> tuple[datetime | None, bool]:
        """Return a person's last badge sync and whether one is pending."""
        row = self._seam.one(self._s.conn, "get_badge_sync", {"recipient": user})
        if row is None:
            return None, False
        last, pending = row
        return (None if last is None else _utc(last)), bool(pending)

    def set_badge_sync(self, user: str, last: datetime | None, pending: bool) -> None:
        """Record a person's last badge sync and whether one is pending.

        A new pending sync remembers the log position before the event that asked for it:
        the threads read after it are its cleared list.
        """
        position = self._s.position
        after = position - 1 if position is not None else None
        self._seam.run(
            self._s.conn,
            "set_badge_sync",
            {"recipient": user, "last_sync_at": last, "pending": pending, "after_seq": after},
        )


def _thread_path(session: Session, thread: str) -> NotificationPath | None:
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


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)
