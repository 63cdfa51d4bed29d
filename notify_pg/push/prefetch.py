"""The batched reads of `notify_pg.push.world.PgWorld`: a page's facts in a few queries.

`WorldPrefetch` loads into the session's caches what the fan-out of an event, a page of due
work (`WorldPrefetch.prefetch_due`) or a batch of push sends (`prefetch_badges`,
`prefetch_allowed`) will read, for all the people at once; `PgWorld` then answers from the
caches. A host with the batched reads (`notify_pg.stores.ports.BatchFactsPort`) is asked once
per kind of fact; any other host per thread or person.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from notify_core.hints.ports import Due, Window
from notify_pg.db.seam import Seam
from notify_pg.push.preferences import PgPreferences
from notify_pg.push.session import ADMIN_ENABLED_KEY, INPUT_NEEDED_KEY, Session, as_utc
from notify_pg.stores.facts import DEFAULT_LEVEL_KEY, FactsReader
from notify_pg.stores.ports import BatchFactsPort, PipelineHostPorts

if TYPE_CHECKING:  # the world builds its prefetch: no import cycle at run time
    from notify_pg.push.world import PgWorld

__all__ = ["WorldPrefetch"]


class WorldPrefetch:
    """The batched reads of one `PgWorld` (one transaction's session).

    Args:
        world: the world whose per-person answers fill what a host without batched reads
            cannot give at once.
        session: the transaction's session (the caches).
        host: the host's ports.
        seam: the library's statements.
        facts: the batched reader of level facts (``None``: no level facts prefetched).
    """

    def __init__(
        self,
        world: PgWorld,
        session: Session,
        host: PipelineHostPorts,
        seam: Seam,
        facts: FactsReader | None,
    ) -> None:
        self._world = world
        self._s = session
        self._host = host
        self._seam = seam
        self._facts = facts

    def load_users(self, people: Iterable[str]) -> None:
        """Load the people the session does not know yet."""
        s = self._s
        missing = [p for p in dict.fromkeys(people) if p not in s.users]
        if missing:
            found = self._host.users(s.conn, missing)
            for person in missing:
                s.users[person] = found.get(person)

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
                self._world.badge_threads(person)
            return
        self.load_users(people)
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
        self.load_places(list(dict.fromkeys(t for _p, t in pairs)))
        unread = [k for k in pairs if k not in s.read]
        positions = host.read_positions_of(s.conn, unread) if unread else {}
        for key in unread:
            s.read[key] = positions.get(key, 0)
        # Only the threads that are unread are asked for more (B1: the others never count).
        places, read = s.threads, s.read
        unread_pairs: list[tuple[str, str]] = []
        floors: dict[tuple[str, str], int] = {}
        for key in pairs:
            place = places.get(key[1])
            if place is None:
                continue
            floor = max(read[key], place.unread_floor_seq)
            if place.last_message_seq > floor:
                unread_pairs.append(key)
                if key not in s.mentions:
                    floors[key] = floor
        counts = host.unread_mentions_of(s.conn, floors) if floors else {}
        for key in floors:
            s.mentions[key] = counts.get(key, 0)
        if self._facts is None or not unread_pairs:
            return
        paths = {t: self._world.path(t) for t in dict.fromkeys(t for _p, t in unread_pairs)}
        wanted = {
            key: path
            for key in unread_pairs
            if key not in s.levels and (path := paths[key[1]]) is not None
        }
        s.levels.update(self._facts.pairs_level_facts(s.conn, wanted, by_people=True))

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
        self.load_users(people)
        pairs = list(dict.fromkeys((d.recipient, d.thread) for d in dues if d.thread))
        self.load_places(list(dict.fromkeys(t for _p, t in pairs)))
        self.prefetch_allowed(pairs)
        self.load_read(pairs)
        self.load_windows(pairs)
        if people:
            self._world.devices(people[0])
            self._world.connections(people[0])
        settings = host.settings(
            s.conn, people, [DEFAULT_LEVEL_KEY, ADMIN_ENABLED_KEY, INPUT_NEEDED_KEY]
        )
        prefs.prefetch(people, settings)
        if self._facts is not None:
            paths = {
                key: path
                for key in pairs
                if key not in s.levels and (path := self._world.path(key[1])) is not None
            }
            s.levels.update(self._facts.pairs_level_facts(s.conn, paths, settings))
        self.load_uncounted([d for d in dues if d.what == "flush"])
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

    def load_read(self, pairs: Sequence[tuple[str, str]]) -> None:
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
                found[(person, thread)] = self._world.read_seq(person, thread)
        for key in missing:
            s.read[key] = found.get(key, 0)

    def load_windows(self, pairs: Sequence[tuple[str, str]]) -> None:
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

    def load_uncounted(self, flushes: Sequence[Due]) -> None:
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
                "before": self._world.before(),
            },
        )
        for thread, after, upto, count in rows:
            s.uncounted[(thread, int(after), int(upto))] = int(count)

    def load_places(self, threads: Sequence[str]) -> None:
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

    def badge(self, user: str, threads: list[str]) -> None:
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
                    self._world.read_seq(user, thread), info.unread_floor_seq if info else 0
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
            if (user, thread) not in s.levels and (path := self._world.path(thread)) is not None
        }
        for thread, facts in self._facts.user_level_facts(s.conn, user, paths).items():
            s.levels[(user, thread)] = facts
