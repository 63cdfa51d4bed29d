"""Loading an event log into PostgreSQL as a host would (`notify db load`, the parity tests).

`LogLoader` takes the events of a formats.md log in order (chat events of section 2, wiki
events of section 4, mixed in one log too) and, in one transaction, writes what each event
changes in the reference host (`WorldLoader` for the chat, `WikiLoader` for the wiki: its
world, and the outbox through `notify_pg.inbox.reads.emit` for an activity) and appends the
event to notify's event log: what a host does when its world changes. After a wiki activity's
commit the inbox's fan-out runs at once, as a worker that keeps up (and a replay) would, so
that the log's later reads and dismissals, which name entries as a replay does, find them.
Given each event's `event_digest`, the loader remembers what it wrote (the reference host's
``loaded_events``, in the same transaction) and skips, and counts, what is loaded already:
loading a log twice, or again after a failure, writes each event once. With a `Worker`
(on a clock the loader sets to each event's time) it also runs the pipeline between events
the way a worker that keeps up would meet them: due work up to the event's time first (with
the world as it was before the event), then the host's write, then the consumer. With one
partition the hints it decides are those of `notify replay` of the same file, in order.

`shift_to_end_now` moves a log's instants so that it ends now (a demo log lies in the past,
and the worker skips pushes older than ``push.max_age`` as ``expired``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from notify_core.events.log import Event
from notify_core.inbox.pipeline import ACTIVITY_TYPES
from notify_core.values.errors import InvalidInput
from notify_core.values.instants import format_instant, parse_instant
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Seam
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.push.worker import Worker
from notify_pg.stores.events import EventLog, NewEvent, read_event_log
from notify_reference_host import DEFAULT_HOST_SCHEMA
from notify_reference_host.records_load import RECORD_EVENTS
from notify_reference_host.wiki import ReferenceWiki
from notify_reference_host.wiki_load import WikiLoader
from notify_reference_host.world import WorldLoader

__all__ = [
    "FAR",
    "LogLoader",
    "SettableClock",
    "event_digest",
    "loadable",
    "shift_by",
    "shift_to_end_now",
]

#: Chat activities of formats.md section 2 that change nothing in the host's tables: the
#: event log is all a host writes for them.
_LOG_ONLY: Final = frozenset({"run.state_changed", "access.expiring", "device.pending"})


def loadable(event_type: str) -> bool:
    """Whether the reference host knows events of this type (formats.md sections 2 and 4)."""
    return (
        WorldLoader.handles(event_type) or WikiLoader.handles(event_type) or event_type in _LOG_ONLY
    )


def event_digest(obj: Mapping[str, Any]) -> str:
    """The identity of a log's event for `LogLoader`: SHA-256 of its JSON object with sorted
    keys (member order and spacing of the line do not count; its seq and every member do)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


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
        #: Events skipped because they were loaded before (recognised by their digest).
        self.already = 0
        #: Event types the reference host does not know -> how many were appended to the
        #: event log only (a consumer counts and ignores them, as a replay does).
        self.unknown: Counter[str] = Counter()
        self._world = WorldLoader(schema, host_schema)
        wiki = ReferenceWiki(host_schema)
        self._wiki = WikiLoader(wiki, InboxFanOut(wiki, schema=schema), schema=schema)
        self._wiki_resumed = False
        self._log = EventLog(schema)
        self._marks = Seam("notify_reference_host", host_schema)

    def append(self, event: Event) -> int:
        """Write the event's world change and append it, in one transaction; return its seq."""
        return self.append_many([event])[0]

    def append_many(self, events: Sequence[Event]) -> list[int]:
        """Write the events' world changes in order and append them, all in one transaction
        (a host that writes a batch); return their seqs. Without a worker between them, the
        database ends as after `append` of each in turn; an error writes none of them."""
        return [seq for seq in self.write(events) if seq is not None]

    def last_loaded(self, digests: Sequence[str]) -> tuple[int, datetime] | None:
        """Find the last of a log's events (by their `event_digest`) that is loaded already;
        return its index and its instant in the event log, ``None`` when none is loaded."""
        rows = self._marks.all(self.conn, "loaded_event_seqs", {"digests": list(digests)})
        seqs = {str(row[0]): int(row[1]) for row in rows}
        index = max((i for i, digest in enumerate(digests) if digest in seqs), default=None)
        if index is None:
            return None
        seq = seqs[digests[index]]
        stored = next(read_event_log(self.conn, self._log.schema, seq - 1, page_size=1))
        return index, parse_instant(str(stored["occurred_at"]))

    def going_back(
        self, events: Sequence[Event], digests: Sequence[str] | None = None
    ) -> tuple[int, datetime] | None:
        """Find the first event to write whose ``occurred_at`` goes back from the event
        log's newest instant or from the event before it (formats.md section 2: the clock
        never decreases); return its index and the instant it goes back from, or ``None``.

        Events loaded before (by their ``digests``) are not written again and not checked.
        `write` does not check: a host's append never fails for its clock (the event log
        raises an instant that would go back, `notify_pg.stores.events.NewEvent`); a loader
        of a whole log (`notify db load`) asks first and refuses the log as a replay would.
        """
        known = self._known(digests) if digests is not None else set()
        last = self._log.last_instant(self.conn)
        for index, event in enumerate(events):
            if digests is not None and digests[index] in known:
                continue
            if last is not None and event.occurred_at < last:
                return index, last
            last = event.occurred_at
        return None

    def segments(self, events: Sequence[Event], size: int) -> Iterator[range]:
        """Split events into the batches `write` takes: an event the wiki handles alone (its
        fan-out runs after its commit, before the next event), runs of the others up to
        ``size`` events."""
        start = 0
        for index, event in enumerate(events):
            if WikiLoader.handles(event.type):
                yield from _chunks(start, index, size)
                yield range(index, index + 1)
                start = index + 1
        yield from _chunks(start, len(events), size)

    def write(
        self, events: Sequence[Event], digests: Sequence[str] | None = None
    ) -> list[int | None]:
        """Write the events' world changes in order and append them, all in one transaction;
        return each one's seq in the database, ``None`` for one loaded before.

        With ``digests`` (each event's `event_digest`) the events loaded before are skipped
        and counted in ``already``, and the others are remembered in the same transaction.

        Raises:
            ValueError: more than one event of which one the wiki handles (its fan-out must
                run before the next event: `segments` splits a log so).
        """
        if digests is not None and len(digests) != len(events):
            raise ValueError("one digest per event")
        wiki = any(WikiLoader.handles(event.type) for event in events)
        if wiki and len(events) > 1:
            raise ValueError("an event the wiki handles is written alone (LogLoader.segments)")
        known = self._known(digests) if digests is not None else set()
        todo = [
            (index, event)
            for index, event in enumerate(events)
            if digests is None or digests[index] not in known
        ]
        result: list[int | None] = [None] * len(events)
        self.already += len(events) - len(todo)
        if not todo:
            return result
        if wiki and not self._wiki_resumed:
            self._wiki.resume(self.conn)
            self._wiki_resumed = True
        # Pipelined when only the chat world writes: its statements go without waiting for
        # each answer (none is read); one round trip per batch instead of one per statement.
        # The wiki reads what it writes, so its single event goes unpipelined; so do the
        # writes of preference records (they read the rows they lock and count what changed).
        reads = wiki or any(event.type in RECORD_EVENTS for _i, event in todo)
        pipelined = contextlib.nullcontext() if reads else self.conn.pipeline()
        with self.conn.transaction(), pipelined:
            for _index, event in todo:
                self._world.apply(self.conn, event)
                self._wiki.apply(self.conn, event)
            seqs = self._log.append_many(self.conn, [_new_event(event) for _i, event in todo])
            if digests is not None:
                marks = [
                    {"digest": digests[index], "log_seq": event.seq, "event_seq": seq}
                    for (index, event), seq in zip(todo, seqs, strict=True)
                ]
                self._marks.run_many(self.conn, "mark_loaded", marks)
        for seq, (index, event) in zip(seqs, todo, strict=True):
            self.seq_map[seq] = event.seq
            result[index] = seq
            if not loadable(event.type):
                self.unknown[event.type] += 1
        self.loaded += len(todo)
        if wiki and todo[0][1].type in ACTIVITY_TYPES:
            self._wiki.fanout.drain(self.conn)
        return result

    def _known(self, digests: Sequence[str]) -> set[str]:
        rows = self._marks.all(self.conn, "loaded_digests", {"digests": list(digests)})
        return {str(row[0]) for row in rows}

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

    def feed(self, event: Event, digest: str | None = None) -> int | None:
        """Load one event: due work up to its time, the host's write with the append, then
        the consumer (the last two only with a worker); return its seq in the database.

        With its ``digest``, an event loaded before is skipped (``None``, counted in
        ``already``): no clock move, no due work, no write.
        """
        if digest is not None and self._known([digest]):
            self.already += 1
            return None
        if self.clock is not None:
            self.clock.set(event.occurred_at)
        self.due(event.occurred_at)
        if self.before is not None:
            self.before(event)
        seq = self.write([event], None if digest is None else [digest])[0]
        self.drain()
        return seq

    def finish(self, until: datetime = FAR) -> None:
        """The log ends: the clock runs on and what is pending up to ``until`` runs."""
        self.due(until)


def _chunks(start: int, end: int, size: int) -> Iterator[range]:
    for first in range(start, end, size):
        yield range(first, min(first + size, end))


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

    Raises:
        InvalidInput: ``instant_out_of_range`` when a shifted instant would leave years
            1-9999 (a log spanning millennia); nothing is changed then.
    """
    last: datetime | None = None
    for obj in objects:
        at = obj.get("occurred_at")
        if isinstance(at, str):
            last = parse_instant(at) if last is None else max(last, parse_instant(at))
    if last is None:
        return timedelta(0)
    span = (now or datetime.now(UTC)).replace(microsecond=0) - last
    shift_by(objects, span)
    return span


def shift_by(objects: list[dict[str, Any]], span: timedelta) -> None:
    """Move every instant of a log's events by ``span``, as `shift_to_end_now` does (a load
    resumed with ``--end-now`` keeps the span of the events loaded before).

    Raises:
        InvalidInput: ``instant_out_of_range`` as `shift_to_end_now`; nothing is changed then.
    """
    moves: list[tuple[dict[str, Any], str, str]] = []  # (object, member, new value)
    for obj in objects:
        at = obj.get("occurred_at")
        if isinstance(at, str):
            moves.append((obj, "occurred_at", _shifted(at, span, obj, "/occurred_at")))
        payload = obj.get("payload")
        preference = payload.get("preference") if isinstance(payload, Mapping) else None
        if isinstance(preference, dict) and isinstance(preference.get("muted_until"), str):
            pointer = "/payload/preference/muted_until"
            moves.append(
                (preference, "muted_until", _shifted(preference["muted_until"], span, obj, pointer))
            )
    # Changed only once every instant fits: an error leaves the objects as they were.
    for target_obj, member, value in moves:
        target_obj[member] = value


def _shifted(text: str, span: timedelta, obj: Mapping[str, Any], pointer: str) -> str:
    try:
        return format_instant(parse_instant(text) + span)
    except OverflowError:
        raise InvalidInput(
            "instant_out_of_range",
            f"event seq {obj.get('seq')}: {text} moved by {span.days:,} days to end now falls "
            "outside years 1-9999 (the log spans too long to end now; load it without "
            "--end-now)",
            pointer,
        ) from None
