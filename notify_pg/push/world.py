"""`PgWorld`: `notify_core.ports.WorldFacts` on the host's facts and the event log.

The host's facts come through `notify_pg.stores.ports.PipelineHostPorts`; agent runs (S2, S3)
and, while an event is handled, read positions (B2) from ``event_log`` by log order, as of just
before the event. Facts are loaded for all candidates of a fan-out at once
(`PgWorld.prefetch_due`, `PgWorld.prefetch_badges`) and cached for one event or one page.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from notify_core.decide import Connection, Device
from notify_core.decision_values import MOBILE
from notify_core.events import Event
from notify_core.kinds import RunState, run_active
from notify_core.ports import ChannelInfo, Due, ThreadInfo, UserInfo, Window
from notify_pg.db.seam import Seam
from notify_pg.push.preferences import PgPreferences
from notify_pg.push.session import (
    ADMIN_ENABLED_KEY,
    INPUT_NEEDED_KEY,
    Session,
    as_utc,
    thread_path,
)
from notify_pg.stores.facts import DEFAULT_LEVEL_KEY, FactsReader
from notify_pg.stores.ports import BatchFactsPort, NotificationPath, PipelineHostPorts

__all__ = ["PgWorld"]

_log = logging.getLogger("notify_pg")


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
        (`notify_pg.stores.ports.BatchFactsPort`) and no event being handled, the number of
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
        (`notify_pg.stores.ports.BatchFactsPort`) is asked per thread or person instead.
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
        found = {(r, t): Window(end=as_utc(end), collected=n) for r, t, end, n in rows}
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
        return thread_path(self._s, thread)

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
