"""`PgWorld`: `notify_core.hints.ports.WorldFacts` on the host's facts and the event log.

The host's facts come through `notify_pg.stores.ports.PipelineHostPorts`; agent runs (S2, S3)
and, while an event is handled, read positions (B2) from ``event_log`` by log order, as of just
before the event. Facts are loaded for all candidates of a fan-out at once
(`PgWorld.prefetch_due`, `PgWorld.prefetch_badges`) and cached for one event or one page.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from notify_core.events.log import Event
from notify_core.hints.decide import Connection, Device
from notify_core.hints.decision_values import MOBILE
from notify_core.hints.ports import ChannelInfo, Due, ThreadInfo, UserInfo
from notify_core.values.kinds import RunState, run_active
from notify_pg.db.seam import Seam
from notify_pg.push.preferences import PgPreferences
from notify_pg.push.prefetch import WorldPrefetch
from notify_pg.push.session import (
    Session,
    thread_path,
)
from notify_pg.stores.facts import FactsReader
from notify_pg.stores.ports import NotificationPath, PipelineHostPorts

__all__ = ["PgWorld"]

_log = logging.getLogger("notify_pg")


class PgWorld:
    """`notify_core.hints.ports.WorldFacts` on the host ports and the event log.

    Args:
        session: the transaction's session.
        host: the host's ports.
        schema: the library's schema (for ``event_log`` and ``push_registrations``).
        facts: the batched reader of level facts (for the badge's threads).
        live: whether ``gateway`` routes can be delivered (the worker has a sink). Without
            that, live routes fail closed: nobody's connections are read, so no device counts
            as live, nobody as active in a thread (D4), and every active device gets ``push``
            (D5), as with no gateway at all.
        owns: the recipients of a partitioned consumer's batch (the pipeline's ``owns``):
            `readers` answers only those, so a batch of one partition does not load the
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
        self._prefetch = WorldPrefetch(self, session, host, self._seam, facts)

    # --- people, places ----------------------------------------------------------------------

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
        cached = self._s.readers.get(channel)
        if cached is None:
            cached = self._s.readers[channel] = list(
                self._host.channel_readers(self._s.conn, channel)
            )
        readers: Sequence[str] = cached
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

    def allowed_many(self, people: Sequence[str], thread: str) -> list[bool]:
        """`allowed` of each of ``people``, in order (a fan-out's D2: the rights held by the
        session are read without a call per person, the others are loaded as `allowed` does)."""
        known, one = self._s.allowed, self.allowed
        return [known[key] if (key := (p, thread)) in known else one(p, thread) for p in people]

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
            {"thread": thread, "after": after, "upto": upto, "before": self.before()},
        )
        return int(row[0]) if row is not None else 0

    # --- batched reads (`notify_pg.push.prefetch.WorldPrefetch`) -----------------------------

    def prefetch_badges(self, users: Iterable[str]) -> None:
        """Load what the badges of many people read, with a few queries for all of them
        (`notify_pg.push.prefetch.WorldPrefetch.prefetch_badges`)."""
        self._prefetch.prefetch_badges(users)

    def prefetch_due(self, dues: Sequence[Due], prefs: PgPreferences) -> None:
        """Load the facts a page of due work reads, with a few queries for all of it
        (`notify_pg.push.prefetch.WorldPrefetch.prefetch_due`)."""
        self._prefetch.prefetch_due(dues, prefs)

    def prefetch_allowed(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Load the read rights (D2) of many (person, thread) pairs at once."""
        self._prefetch.prefetch_allowed(pairs)

    def _load_users(self, people: Iterable[str]) -> None:
        self._prefetch.load_users(people)

    def _load_places(self, threads: Sequence[str]) -> None:
        self._prefetch.load_places(threads)

    def path(self, thread: str) -> NotificationPath | None:
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
        self._prefetch.badge(user, threads)
        return list(threads)

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

    def before(self) -> int:
        """The log position facts are read as of: the event being handled, else the head."""
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
            self._s.conn, "newest_anchor_run", {"thread": thread, "before": self.before()}
        )
        if row is None:
            return False
        run_agent, state = row
        return bool(run_agent == agent and run_active(RunState(state)))

    def last_agent_message(self, run: str) -> tuple[str, int] | None:
        """S3: the run agent's newest message in the anchor's thread before the event, if it
        lies after the run's anchor; none for a run without an anchor message (even if its
        agent wrote in the thread before)."""
        before = self.before()
        row = self._seam.one(self._s.conn, "run_facts", {"run": run, "before": before})
        if row is None:
            return None
        thread, anchor_seq, agent = row
        if thread is None or agent is None:
            return None  # S3: a run without an anchor message points at its thread only
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
