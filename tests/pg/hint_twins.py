"""The two twins of the push path's ports, fed the same facts the same way (the contract suites).

`notify_core.hints.ports` names three ports: `WorldFacts` (with its devices and its messages
parts), `PreferenceFacts` and `Schedule`. Each has an in-memory twin
(`notify_core.hints.memory`) and a PostgreSQL twin (`notify_pg.push`). Both learn the world from
the event log: the memory store through `MemoryStore.record`, PostgreSQL through the reference
host's loader (`LogLoader`: the host's tables change with the event's append, as a host
does). A `Twin` hides which one a test talks to: it takes events (`feed`) and hands out each
port (`world`, `prefs`, `schedule`).

The PostgreSQL twin runs in one transaction that is rolled back at the end of the test (the
database is cloned once per session): a port is one transaction's view, so each call of
`world`, `prefs` or `schedule` starts a new `Session` and sees every event fed so far.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import psycopg
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.events.log import parse_event
from notify_core.hints.levels import Level
from notify_core.hints.memory import MemoryStore
from notify_core.hints.ports import PreferenceFacts, Schedule, WorldFacts
from notify_pg.push import PgPreferences, PgSchedule, PgWorld, Session
from notify_pg.stores.events import EventLog
from notify_pg.stores.facts import FactsReader
from notify_pg.stores.preferences import PreferenceRepository
from notify_pg.stores.values import StoreConfig
from notify_reference_host import ReferenceHost
from notify_reference_host.load import LogLoader

__all__ = ["INSTANCE_DEFAULT", "MemoryTwin", "PgTwin", "Twin"]

#: The instance default level (L3's last fact) of both twins.
INSTANCE_DEFAULT = Level.MENTIONS


class Twin(Protocol):
    """One implementation of the push path's ports, learning its world from events."""

    #: ``memory`` or ``postgresql`` (the test id).
    name: str

    def feed(self, events: Iterable[Mapping[str, object]]) -> None:
        """Take events of formats.md in order (JSON objects, as a log line holds them)."""

    def world(self) -> WorldFacts:
        """The world facts as of every event fed."""

    def prefs(self) -> PreferenceFacts:
        """The preferences as of every event fed."""

    def schedule(self) -> Schedule:
        """The schedule: the one of the next round (PostgreSQL: a new transaction's view, after
        the writes of the previous one's)."""


class MemoryTwin:
    """The in-memory twin: one `MemoryStore` that records every event."""

    name = "memory"

    def __init__(self) -> None:
        self.store = MemoryStore(INSTANCE_DEFAULT)

    def feed(self, events: Iterable[Mapping[str, object]]) -> None:
        """Record each event in the store (the pipeline hands every event to its world)."""
        for obj in events:
            self.store.record(parse_event(dict(obj)))

    def world(self) -> WorldFacts:
        """The store's `MemoryWorld`."""
        return self.store.world

    def prefs(self) -> PreferenceFacts:
        """The store's `MemoryPreferences`."""
        return self.store.prefs

    def schedule(self) -> Schedule:
        """The store's `MemorySchedule` (one for the whole replay)."""
        return self.store.agenda


class PgTwin:
    """The PostgreSQL twin: the reference host and notify's tables, loaded event by event.

    Args:
        conn: an autocommit connection inside a transaction the test rolls back (the
            loader's and the ports' transactions nest in it as savepoints).
        at_event: the world as a consumer round sees it while it handles the next event
            (facts of the log before that event's position) instead of as due work sees it
            outside any event (the host's current facts).
    """

    name = "postgresql"

    def __init__(self, conn: psycopg.Connection[Any], *, at_event: bool = False) -> None:
        self.conn = conn
        self.at_event = at_event
        if at_event:
            self.name = "postgresql-at-event"
        self.host = ReferenceHost(HOST_SCHEMA)
        self.loader = LogLoader(conn, schema=SCHEMA, host_schema=HOST_SCHEMA)
        self.facts = FactsReader(
            self.host, StoreConfig(instance_default_level=INSTANCE_DEFAULT.value), SCHEMA
        )
        self._schedule: PgSchedule | None = None

    def feed(self, events: Iterable[Mapping[str, object]]) -> None:
        """Load each event as a host writes it: its world change with its append."""
        for obj in events:
            self.loader.append(parse_event(dict(obj)))

    def world(self) -> WorldFacts:
        """A `PgWorld` on a new session: outside any event (the host's current facts, runs
        from the whole log), or with ``at_event`` while handling an event appended next."""
        session = Session(self.conn)
        if self.at_event:
            row = self.conn.execute(f"SELECT coalesce(max(seq), 0) FROM {SCHEMA}.event_log")
            head = row.fetchone()
            session.at(1 + (int(head[0]) if head is not None else 0), None)
        return PgWorld(session, self.host, SCHEMA, self.facts)

    def prefs(self) -> PreferenceFacts:
        """A `PgPreferences` on a new session."""
        repository = PreferenceRepository(self.host, EventLog(SCHEMA), SCHEMA)
        return PgPreferences(
            Session(self.conn), self.host, self.facts, repository, INSTANCE_DEFAULT
        )

    def schedule(self) -> Schedule:
        """A `PgSchedule` on a new session, after the previous one wrote what it holds."""
        if self._schedule is not None:
            self._schedule.write_pending()
        self._schedule = PgSchedule(Session(self.conn), SCHEMA)
        return self._schedule
