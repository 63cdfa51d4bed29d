"""Loading an event log into PostgreSQL as a host would (`notify db load`, the parity tests).

`LogLoader` takes the events of a formats.md section 2 log in order and, per event, in one
transaction, writes what the event changes in the reference host (`WorldLoader`) and appends
the event to notify's event log: what a host does when its world changes. With a `Worker`
(on a clock the loader sets to each event's time) it also runs the pipeline between events
the way a worker that keeps up would meet them: due work up to the event's time first (with
the world as it was before the event), then the host's write, then the consumer. With one
partition the hints it decides are those of `notify replay` of the same file, in order.

`shift_to_end_now` moves a log's instants so that it ends now (a demo log lies in the past,
and the worker skips pushes older than ``push.max_age`` as ``expired``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from notify_core.events import Event
from notify_core.instants import format_instant, parse_instant
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn
from notify_pg.push.worker import Worker
from notify_pg.reference_host import DEFAULT_HOST_SCHEMA
from notify_pg.reference_host.world import WorldLoader
from notify_pg.stores.events import EventLog, NewEvent

__all__ = ["FAR", "LogLoader", "SettableClock", "shift_to_end_now"]

#: The end of the clock after a log (`LogLoader.finish`): everything pending runs before it.
FAR = datetime(2100, 1, 1, tzinfo=UTC)


class SettableClock:
    """A clock the loader sets to each event's time (the worker's ``clock``)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        """The clock's instant."""
        return self.now

    def set(self, now: datetime) -> None:
        """Move the clock to ``now``."""
        self.now = now


class LogLoader:
    """Writes a log's events into the reference host and the event log, one transaction each.

    Args:
        conn: an autocommit connection to the database (migrated, with the reference host).
        schema: notify's schema.
        host_schema: the reference host's schema.
        worker: runs the pipeline between events when given; its clock must be ``clock``.
        clock: the worker's clock, set to each event's time.
        before: called before each event's write (after its due work), for tests.

    Attributes:
        seq_map: the database's seq of each loaded event -> the seq in the log.
        loaded: the events written so far.
    """

    def __init__(
        self,
        conn: Conn,
        *,
        schema: str = DEFAULT_SCHEMA,
        host_schema: str = DEFAULT_HOST_SCHEMA,
        worker: Worker | None = None,
        clock: SettableClock | None = None,
        before: Callable[[Event], None] | None = None,
    ) -> None:
        if (worker is None) != (clock is None):
            raise ValueError("a worker needs the clock the loader sets, and only a worker does")
        self.conn = conn
        self.worker = worker
        self.clock = clock
        self.before = before
        self.seq_map: dict[int, int] = {}
        self.loaded = 0
        self._world = WorldLoader(schema, host_schema)
        self._log = EventLog(schema)

    def append(self, event: Event) -> int:
        """Write the event's world change and append it, in one transaction; return its seq."""
        return self.append_many([event])[0]

    def append_many(self, events: Sequence[Event]) -> list[int]:
        """Write the events' world changes in order and append them, all in one transaction
        (a host that writes a batch); return their seqs. Without a worker between them, the
        database ends as after `append` of each in turn; an error writes none of them."""
        # Pipelined: the world's statements go without waiting for each answer (none of them
        # is read); one round trip per batch instead of one per statement.
        with self.conn.transaction(), self.conn.pipeline():
            for event in events:
                self._world.apply(self.conn, event)
            seqs = self._log.append_many(self.conn, [_new_event(event) for event in events])
        for seq, event in zip(seqs, events, strict=True):
            self.seq_map[seq] = event.seq
        self.loaded += len(events)
        return seqs

    def drain(self) -> None:
        """Let the worker's consumer reach the head of the log."""
        if self.worker is not None:
            while self.worker.consume():
                pass

    def due(self, until: datetime) -> None:
        """Run the consumer, then every piece of due work at or before ``until``."""
        if self.worker is None:
            return
        self.drain()
        while self.worker.run_due(until):
            pass

    def feed(self, event: Event) -> int:
        """Load one event: due work up to its time, the host's write with the append, then
        the consumer (the last two only with a worker); return its seq in the database."""
        if self.clock is not None:
            self.clock.set(event.occurred_at)
        self.due(event.occurred_at)
        if self.before is not None:
            self.before(event)
        seq = self.append(event)
        self.drain()
        return seq

    def finish(self, until: datetime = FAR) -> None:
        """The log ends: the clock runs on and what is pending up to ``until`` runs."""
        self.due(until)


def _new_event(event: Event) -> NewEvent:
    scope = {
        key: value
        for key, value in (
            ("space", event.scope.space),
            ("channel", event.scope.channel),
            ("thread", event.scope.thread),
        )
        if value is not None
    }
    return NewEvent(
        type=event.type,
        payload=dict(event.payload),
        actor=event.actor,
        audience=event.audience,
        scope=scope or None,
        origin=event.origin,
        occurred_at=event.occurred_at,
    )


def shift_to_end_now(objects: list[dict[str, Any]], now: datetime | None = None) -> timedelta:
    """Move every instant of a log's events (parsed JSON objects, changed in place) by the
    same span so that the last event happens at ``now`` (default: the current time); return
    the span. The instants are ``occurred_at`` and a logged preference's ``muted_until``;
    a log without events is left alone. Order and gaps between events stay as they were.
    """
    last: datetime | None = None
    for obj in objects:
        at = obj.get("occurred_at")
        if isinstance(at, str):
            last = parse_instant(at) if last is None else max(last, parse_instant(at))
    if last is None:
        return timedelta(0)
    target = (now or datetime.now(UTC)).replace(microsecond=0)
    span = target - last
    for obj in objects:
        at = obj.get("occurred_at")
        if isinstance(at, str):
            obj["occurred_at"] = format_instant(parse_instant(at) + span)
        payload = obj.get("payload")
        preference = payload.get("preference") if isinstance(payload, Mapping) else None
        if isinstance(preference, dict) and isinstance(preference.get("muted_until"), str):
            until = parse_instant(preference["muted_until"])
            preference["muted_until"] = format_instant(until + span)
    return span
