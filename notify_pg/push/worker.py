"""The worker: the pipeline on PostgreSQL, from the event log to push sends (seed 001).

One `Worker` runs three kinds of rounds, each its own transaction (or, for pushes, three):

- **consumer round** (`Worker.consume`): lock the cursor of one partition of the consumer
  (``FOR UPDATE SKIP LOCKED``, the most lagging one no other worker holds: one round per
  partition at a time, whatever the number of workers) and the cursors of the other free
  partitions at the same position, up to the worker's share of the partitions (all of them
  for a lone worker: one round decides for everybody), read the next events after it in
  ``seq`` order, run each through `notify_core.pipeline.Pipeline.handle` deciding for the
  partition's recipients only (due work of those recipients at or before the event first),
  carry out the hints (push sends, the host's sink), move the cursor, commit. A crash anywhere
  in the round rolls all of it back: no hint is doubled or lost (seed 001 requirement 1).
  With ``WorkerConfig.partitions`` = N, N rounds (on up to N workers) run side by side and
  together give exactly the hints of one consumer (`notify_core.partitions`).
- **due-work round** (`Worker.run_due`): `Pipeline.advance` up to now, claiming windows,
  delayed releases and badge syncs with ``FOR UPDATE SKIP LOCKED`` (several workers drain
  them), never past the first event some partition of the consumer has not handled yet (so
  due work never runs ahead of an earlier event, as in a replay), at most ``due_batch`` items
  per transaction.
- **push round** (`Worker.send_pushes`, seed 001 note 11): step 1 in a transaction claims due
  push sends under a lease and checks each (registration, age, access with the rights of now,
  provider) and computes the badge; step 2 calls the providers outside any transaction under
  the process-wide `notify_pg.push.providers.ProviderGate`; step 3 applies each result to the
  registration row locked ``FOR UPDATE`` (`notify_core.delivery.apply_result`) and schedules
  a retry (`retry_delay` with jitter drawn here, `retry_at`). A crash between steps 2 and 3
  lets the lease expire and the push goes again with the same notification id: at least once.

Logs carry counts, kind codes, reasons, outcomes, provider names and error types: never a
person, a thread, a message or a token (a token's hash prefix at most).
"""

from __future__ import annotations

import inspect
import logging
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, cast

import attrs
import psycopg

from notify_core.decide import METRIC_REASONS, Collect, Policy, Send, Skip, Via
from notify_core.delivery import (
    Action,
    Notification,
    RegistrationState,
    ResultClass,
    SendResult,
    apply_result,
    retry_at,
    retry_delay,
)
from notify_core.errors import NotifyError, UsageError
from notify_core.events import Event, EventError, parse_event
from notify_core.instants import format_instant
from notify_core.kinds import THREAD_KINDS, Kind, kind_code, kind_from_code
from notify_core.partitions import Partition, Partitions
from notify_core.pipeline import Hint, Pipeline
from notify_pg.db.errors import PartitionError, StorageError, translate
from notify_pg.db.ids import new_id
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Seam
from notify_pg.push import PgPreferences, PgSchedule, PgWorld, Session
from notify_pg.push.providers import ProviderGate, PushProvider
from notify_pg.push.recorder import NullRecorder, Recorder
from notify_pg.stores.events import EventLog
from notify_pg.stores.facts import FactsReader
from notify_pg.stores.ports import PipelineHostPorts
from notify_pg.stores.preferences import PreferenceRepository
from notify_pg.stores.registrations import Registration, RegistrationRepository
from notify_pg.stores.values import StoreConfig

__all__ = ["Clock", "HintSink", "Worker", "WorkerConfig", "WorkerStats"]

#: Returns the current instant (aware); tests hand in a fake clock.
Clock = Callable[[], datetime]

_log = logging.getLogger("notify_pg.worker")


def _now() -> datetime:
    return datetime.now(UTC)


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _milliseconds(span: timedelta) -> str:
    # PostgreSQL takes a bare number of milliseconds; 0 would switch the limit off.
    return str(max(1, int(span.total_seconds() * 1000)))


class HintSink(Protocol):
    """Receives every hint of a round inside the round's transaction (the host's hand-off).

    Called once per hint decision in order, with the notification id of a send (``None`` for
    collect and skip). A host uses it for the ``gateway`` routes (live connections) and its
    ``notification.created`` events; it runs in the round's transaction, so what it writes
    commits or rolls back with the round. It must deliver every ``gateway`` route of a send
    or raise: a raise rolls the round back and the worker retries it (fail closed, seed 001
    note 10), so a live route is never dropped. A ``not_allowed`` skip of an event's own
    candidate must leave no trace that names the person (seed 001 AZ-M48).
    """

    def __call__(self, conn: Conn, hint: Hint, notification_id: str | None) -> None:
        """Hand one hint decision to the host."""
        ...


def _at_least_one(instance: WorkerConfig, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UsageError(
            "bad_partition", f"{attribute.name} must be an integer of at least 1, not {value!r}"
        )


@attrs.frozen(kw_only=True)
class WorkerConfig:
    """The worker's settings (seed 001 note 14 names the keys in brackets).

    Args:
        consumer: the name of the consumer's cursors.
        partitions: how many recipient partitions the consumer is split into, each with its
            own cursor (`notify_core.partitions`); consumer rounds of different partitions run
            side by side on several workers. Every worker of a consumer must use the same
            count; changing it is allowed only while all cursors stand at one position
            (`Worker.prepare`). The default 2 lets a second worker run consumer rounds too;
            a lone worker takes both partitions in each round and runs the statements of
            one partition (bench/bench_pg_pipeline.py, docs/postgresql.md).
        batch_size: events per consumer round (``consumer.batch_size``).
        due_batch: due work per due-work transaction.
        send_batch: push sends claimed per push round.
        poll_interval: the pause of `Worker.run` when nothing is to do
            (``consumer.poll_interval``).
        max_concurrent_requests: provider requests at once per process
            (``push.max_concurrent_requests``).
        max_age: the oldest a hint may be when sent (``push.max_age``).
        retry_base: the first retry delay (``push.retry_base``).
        retry_cap: the largest retry delay before jitter (``push.retry_cap``).
        max_failures: consecutive transient failures that deactivate a registration
            (``push.max_consecutive_failures``).
        send_lease: how long a claimed push send stays with its worker before another may
            take it (longer than a provider call can take).
        partition_takeover: the longest a worker's session may sit idle inside a transaction
            (PostgreSQL's ``idle_in_transaction_session_timeout``): a worker that stops
            working mid-round (frozen, stuck in a pause of its host) loses its session after
            it, the round rolls back and another worker takes the partition. A worker whose
            session has been idle for longer does not count in the others' share of the
            partitions until its next statement (`Worker.consume`).
        statement_timeout: the longest one statement of the worker may run or wait for a lock
            (PostgreSQL's ``statement_timeout``).
        instance_id: the ID of the host's instance, carried by every push (seed 001 note
            12); ``None`` leaves it out (a host that serves one instance per app).
    """

    consumer: str = "push"
    partitions: int = attrs.field(default=2, validator=_at_least_one)
    batch_size: int = 100
    due_batch: int = 100
    send_batch: int = 50
    poll_interval: timedelta = timedelta(seconds=1)
    max_concurrent_requests: int = 16
    max_age: timedelta = timedelta(hours=1)
    retry_base: timedelta = timedelta(seconds=5)
    retry_cap: timedelta = timedelta(minutes=10)
    max_failures: int = 5
    send_lease: timedelta = timedelta(minutes=2)
    partition_takeover: timedelta = timedelta(seconds=30)
    statement_timeout: timedelta = timedelta(seconds=60)
    instance_id: str | None = None


@attrs.define
class WorkerStats:
    """What a worker did, in counts (the metrics of seed 001 note 15).

    ``events`` counts the events the worker's consumer rounds read from the log (a round that
    takes several partitions at one position reads each event once); ``partition_events``
    counts them once per partition the round took, so over all workers of a consumer it
    comes to the log's events times the partitions. ``provider_calls`` counts every call of
    a provider, once; ``sent`` counts the results by
    outcome once each is written (a result held over a database outage counts when it is
    written, so with nothing held the two totals are equal); ``failures`` counts failed rounds.
    """

    events: int = 0
    partition_events: int = 0
    bad_events: int = 0
    due: int = 0
    decisions: Counter[str] = attrs.field(factory=Counter)
    skipped: Counter[str] = attrs.field(factory=Counter)
    sent: Counter[str] = attrs.field(factory=Counter)
    push_sends: int = 0
    provider_calls: int = 0
    provider_seconds: float = 0.0
    failures: int = 0


@attrs.frozen
class _Claimed:
    id: int
    notification_id: str
    registration_id: str
    recipient: str
    kind: int
    thread: str | None
    message: str | None
    target: str | None
    quiet: bool
    count: int
    cleared: tuple[str, ...]
    due_at: datetime
    attempt: int


def _claimed(row: tuple[Any, ...]) -> _Claimed:
    ident, nid, reg, recipient, kind, thread, message, target, quiet, count = row[:10]
    cleared, due_at, attempt = row[10:13]
    return _Claimed(
        ident,
        nid,
        reg,
        recipient,
        kind,
        thread,
        message,
        target,
        quiet,
        count,
        tuple(cleared),
        due_at.astimezone(UTC),
        attempt,
    )


class _Owned:
    """Whether a recipient belongs to some partitions, remembered per person (the partition
    is a hash: a round tests every reader of every fan-out)."""

    __slots__ = ("_memo", "_owns")

    def __init__(self, owns: Partition | Partitions) -> None:
        self._owns = owns
        self._memo: dict[str, bool] = {}

    def __call__(self, recipient: str) -> bool:
        known = self._memo.get(recipient)
        if known is None:
            known = self._memo[recipient] = self._owns(recipient)
        return known


@attrs.frozen
class _Prepared:
    claimed: _Claimed
    registration: Registration
    provider: PushProvider
    notification: Notification


class Worker:
    """Consumer, due work and push sends of one process on one database.

    Args:
        connect: opens a new connection in autocommit mode (called again after a failure).
        host: the host's ports (`notify_pg.stores.ports.PipelineHostPorts`).
        schema: the library's schema.
        policy: the instance's policy (the same values a replay takes).
        config: the worker's settings.
        clock: the current instant (due work and push sends; events carry their own time).
        providers: the push providers, one per provider name; a registration of another
            provider is skipped with ``no_provider``.
        sink: receives every hint in the round's transaction and delivers its ``gateway``
            routes. Without a sink, live routes fail closed: the worker reads no live
            connections, so no device is live and every active device gets ``push`` (no
            hint goes only to a gateway that nobody delivers; seed 001 note 10).
        jitter: draws the retry jitter in [0.5, 1] (R2); random by default.
        on_event: a test hook, called in the round after each event is handled.
        gate: the limit on concurrent provider requests; by default the process's gate
            (`ProviderGate.for_process`), shared by every worker of the process.
        rounds: more rounds run after the push round on the worker's connection, each
            returning the work it did (the inbox's fan-out, `notify_pg.inbox.fanout.InboxRound`;
            the mail drain, `notify_pg.mail.drain.MailRound`); their failures are recorded
            under the round's ``name`` (default ``inbox``). A round with ``next_wake()``
            shortens the idle pause to the instant it returns.
        recorder: receives the metric edges of the rounds (`notify_pg.push.recorder.Recorder`,
            e.g. `notify_pg.ops.metrics.OtelRecorder`); by default nothing is recorded.

    Example:
        >>> worker = Worker(lambda: psycopg.connect(dsn, autocommit=True), ReferenceHost(),
        ...                 providers=[FakeProvider("apns")])  # doctest: +SKIP
        >>> worker.run(stop=threading.Event())  # doctest: +SKIP
    """

    def __init__(
        self,
        connect: Callable[[], Conn],
        host: PipelineHostPorts,
        *,
        schema: str = DEFAULT_SCHEMA,
        policy: Policy | None = None,
        config: WorkerConfig | None = None,
        clock: Clock = _now,
        providers: Sequence[PushProvider] = (),
        sink: HintSink | None = None,
        jitter: Callable[[], float] | None = None,
        on_event: Callable[[Conn, Event | None], None] | None = None,
        gate: ProviderGate | None = None,
        rounds: Sequence[Callable[[Conn], int]] = (),
        recorder: Recorder | None = None,
    ) -> None:
        self.schema = schema
        self.recorder: Recorder = recorder or NullRecorder()
        self.policy = policy or Policy()
        self.config = config or WorkerConfig()
        self.clock = clock
        self.host = host
        self.providers: Mapping[str, PushProvider] = {p.name: p for p in providers}
        self.sink = sink
        self.on_event = on_event
        self.stats = WorkerStats()
        self._stats_lock = threading.Lock()
        self._connect = connect
        self._conn: Conn | None = None
        self._cursor_ready = False
        self._seam = Seam("notify_pg", schema)
        self._jitter = jitter or random.Random().random
        self._random_jitter = jitter is None
        store_config = StoreConfig(instance_default_level=self.policy.instance_default_level)
        self._facts = FactsReader(host, store_config, schema)
        self._events = EventLog(schema)
        self._preferences = PreferenceRepository(host, self._events, schema)
        self._registrations = RegistrationRepository(schema)
        self._gate = gate or ProviderGate.for_process(self.config.max_concurrent_requests)
        self._pool: ThreadPoolExecutor | None = None
        # Provider results not written yet (the database failed after the call): written
        # before anything else once it is back, so an outage never sends a push twice.
        self._held: list[tuple[_Prepared, SendResult]] = []
        self._round = "consumer"
        self._unrecorded: dict[str, Any] | None = None
        self._rounds = tuple(rounds)

    # --- connections -------------------------------------------------------------------------

    def _connection(self) -> Conn:
        if self._conn is None or self._conn.closed:
            try:
                conn = self._connect()
            except psycopg.Error as exc:
                raise translate(exc) from exc
            try:
                # A worker that stops working inside a transaction (frozen, paused) must not
                # hold its partition's cursor or its due work: the server ends its session.
                limits = {
                    "idle": _milliseconds(self.config.partition_takeover),
                    "statement": _milliseconds(self.config.statement_timeout),
                }
                self._seam.one(conn, "worker_session", limits)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
            self._cursor_ready = False
        return self._conn

    def close(self) -> None:
        """Close the worker's connection and its provider threads."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    @contextmanager
    def _transaction(self) -> Iterator[Conn]:
        conn = self._connection()
        try:
            with conn.transaction():
                yield conn
        except psycopg.Error as exc:
            if conn.broken or conn.closed:
                self._conn = None
            raise translate(exc) from exc
        except BaseException:
            if conn.broken or conn.closed:
                self._conn = None
            raise

    def _pipeline(
        self,
        session: Session,
        *,
        wait: bool = False,
        budget: int | None = None,
        owns: Partition | Partitions | None = None,
    ) -> tuple[Pipeline, PgSchedule]:
        schedule = PgSchedule(session, self.schema, wait=wait, budget=budget, owns=owns)
        # One partition test per person and round (a fan-out asks for every reader per event).
        owned = None if owns is None else _Owned(owns)
        pipeline = Pipeline(
            policy=self.policy,
            world=PgWorld(
                session,
                self.host,
                self.schema,
                self._facts,
                live=self.sink is not None,
                owns=owned,
            ),
            prefs=PgPreferences(
                session,
                self.host,
                self._facts,
                self._preferences,
                self.policy.instance_default_level,
            ),
            schedule=schedule,
            owns=owned,
        )
        world, prefs = pipeline.world, pipeline.prefs
        assert isinstance(world, PgWorld) and isinstance(prefs, PgPreferences)
        schedule.prefetch = lambda dues: world.prefetch_due(dues, prefs)
        return pipeline, schedule

    # --- consumer ----------------------------------------------------------------------------

    def prepare(self) -> None:
        """Create the consumer's cursors for ``config.partitions``, or re-partition them.

        A new consumer gets one cursor per partition at the start of the log. A consumer
        whose cursors are for another count gets new ones, all at the position where the old
        ones stand, but only when they all stand at one position (a cursor of before
        partitions, or a single one, always does): every event up to it is then handled for
        everybody and nothing after it for anybody, which any count can take over. The change
        waits for rounds in progress; workers still running with the old count then fail
        with ``partition_count_changed``. `consume` calls it once per connection. With more
        than one partition the connection also counts among the consumer's workers from
        then on (a shared advisory lock): a round takes up to the worker's share of the free
        partitions (`consume`).

        Raises:
            PartitionError: ``partition_change_refused``, the cursors stand at different
                positions (the message names them); nothing is changed.
            StorageError: PostgreSQL failed.
        """
        name, parts = self.config.consumer, self.config.partitions
        with self._transaction() as conn:
            if parts > 1:
                # This session counts among the consumer's workers until it ends: the workers
                # share the partitions (`_more_partitions`).
                self._seam.one(conn, "join_consumer", {"schema": self.schema, "name": name})
            rows = self._seam.all(conn, "consumer_partitions", {"name": name})
            if not self._fits(rows, parts):
                # Creation and change are serialized per consumer, so two workers starting at
                # once with different counts never mix their cursors.
                self._seam.one(conn, "lock_consumer", {"schema": self.schema, "name": name})
                rows = self._seam.all(conn, "lock_consumer_partitions", {"name": name})
                if not self._fits(rows, parts):
                    self._repartition(conn, rows)
        self._cursor_ready = True

    @staticmethod
    def _fits(rows: Sequence[tuple[Any, ...]], parts: int) -> bool:
        return [(int(r[0]), int(r[1])) for r in rows] == [(p, parts) for p in range(parts)]

    def _repartition(self, conn: Conn, rows: Sequence[tuple[Any, ...]]) -> None:
        name, parts = self.config.consumer, self.config.partitions
        positions = sorted({int(r[2]) for r in rows})
        if len(positions) > 1:
            where = ", ".join(f"partition {r[0]} of {r[1]} at {r[2]}" for r in rows)
            raise PartitionError(
                "partition_change_refused",
                f"consumer {name!r} cannot change to {parts} partitions: its cursors stand at "
                f"different positions ({where}); let the workers with the old count reach the "
                "head while nothing is appended (for example notify worker --once "
                "--partitions OLD), then start the new count",
            )
        position = positions[0] if positions else 0
        if rows:
            self._seam.run(conn, "delete_cursors", {"name": name})
        self._seam.run(conn, "insert_cursors", {"name": name, "parts": parts, "position": position})
        if rows:
            changed = {"from": int(rows[0][1]), "to": parts, "position": position}
            _log.info("consumer partitions changed", extra={"fields": changed})

    def consume(self) -> int:
        """Run one consumer round on one partition; return the number of events it handled.

        The round takes the most lagging partition that no other worker is running a round
        of, and with it the other free partitions at the same position up to this worker's
        share (the partitions over the consumer's workers, rounded up): they are handled
        together, as one partition of their recipients. 0: that partition is at the head (so
        all free ones are), or every partition is in another worker's round.

        Raises:
            PartitionError: ``partition_change_refused`` (see `prepare`), or
                ``partition_count_changed``: another worker replaced the cursors with another
                count since this worker prepared them.
            StorageError: PostgreSQL failed; the round is rolled back.
        """
        name, parts = self.config.consumer, self.config.partitions
        if not self._cursor_ready:
            self.prepare()
        started = time.perf_counter()
        handled = 0
        hints: list[Hint] = []
        with self._transaction() as conn:
            row = self._seam.one(conn, "lock_cursor", {"name": name, "parts": parts})
            if row is None:
                self._check_partitions(conn)
                return 0
            part, position = int(row[0]), int(row[1])
            rows = self._seam.all(
                conn, "read_events_page", {"after": position, "limit": self.config.batch_size}
            )
            if not rows:
                return 0
            # Only a round with events takes the other free partitions (a poll at the head
            # would count the workers and lock cursors for nothing).
            taken = [part, *self._more_partitions(conn, part, position)]
            session = Session(conn)
            # All partitions own everybody: no filter at all, the plain pipeline.
            owns: Partition | Partitions | None = None
            if len(taken) == 1 and parts > 1:
                owns = Partition(part, parts)
            elif len(taken) < parts:
                owns = Partitions(tuple(taken), parts)
            pipeline, schedule = self._pipeline(session, wait=True, owns=owns)
            for row in rows:
                event = self._event(row)
                if event is not None:
                    session.at(event.seq, event.occurred_at)
                    out = pipeline.handle(event)
                    schedule.write_pending()
                    self._carry_out(session, pipeline, out)
                    hints.extend(out)
                if self.on_event is not None:
                    self.on_event(conn, event)
                position = int(row[0])
                handled += 1
            self._seam.run(
                conn,
                "move_cursors",
                {"name": name, "part_set": taken, "position": position},
            )
            # Events of the round (following) go last: the log's append lock is held from the
            # first append to the commit, and host writes and the other partitions' rounds
            # that append wait for it.
            self._events.append_many(conn, session.appends)
        self._count(hints)
        self.stats.events += handled
        self.stats.partition_events += handled * len(taken)
        duration_ms = _elapsed_ms(started)
        self.recorder.round_done("consumer", handled, duration_ms / 1000)
        _log.info(
            "consumer round",
            extra={
                "fields": {
                    "round": "consumer",
                    "duration_ms": duration_ms,
                    "events": handled,
                    "hints": len(hints),
                    "position": position,
                    "part": part,
                    "parts": parts,
                    "taken": len(taken),
                }
            },
        )
        return handled

    def _more_partitions(self, conn: Conn, part: int, position: int) -> list[int]:
        """The other partitions this round takes: free ones at the same position, up to this
        worker's share of the partitions (their count over the consumer's workers now), so a
        lone worker handles all of them in one round and several workers still share them.
        A worker whose session has been idle for longer than ``partition_takeover`` (paused,
        or busy in a long mail round) does not count until its next statement."""
        parts = self.config.partitions
        if parts == 1:
            return []
        params = {
            "schema": self.schema,
            "name": self.config.consumer,
            "recent": self.config.partition_takeover,
        }
        row = self._seam.one(conn, "consumer_workers", params)
        workers = max(1, int(row[0]) if row is not None else 1)
        share = -(-parts // workers)
        if share <= 1:
            return []
        rows = self._seam.all(
            conn,
            "lock_cursors_at",
            {
                "name": self.config.consumer,
                "parts": parts,
                "position": position,
                "part": part,
                "limit": share - 1,
            },
        )
        return [int(r[0]) for r in rows]

    def _check_partitions(self, conn: Conn) -> None:
        """No free cursor of this count: every partition is busy, or the count changed."""
        rows = self._seam.all(conn, "consumer_partitions", {"name": self.config.consumer})
        if not rows:
            self._cursor_ready = False  # removed behind our back: created again next round
        elif not self._fits(rows, self.config.partitions):
            raise PartitionError(
                "partition_count_changed",
                f"consumer {self.config.consumer!r} now has {int(rows[0][1])} partitions, "
                f"this worker runs {self.config.partitions}: restart it with that count",
            )

    def _event(self, row: tuple[Any, ...]) -> Event | None:
        seq, type_, occurred_at, actor, audience, scope, payload = row
        obj: dict[str, object] = {
            "seq": seq,
            "type": type_,
            "occurred_at": format_instant(occurred_at),
            "payload": payload,
        }
        if actor is not None:
            obj["actor"] = actor
        if audience is not None:
            obj["audience"] = audience
        if scope is not None:
            obj["scope"] = scope
        try:
            return parse_event(obj)
        except EventError as error:
            # A bad event is skipped as a replay skips a bad line; the log names no person.
            self.stats.bad_events += 1
            _log.warning(
                "bad event skipped",
                extra={"fields": {"seq": seq, "code": error.code, "pointer": error.pointer}},
            )
            return None

    # --- due work ----------------------------------------------------------------------------

    def run_due(self, until: datetime | None = None) -> int:
        """Run one due-work round up to ``until`` (default: now); return the work done.

        Never past the first event that some partition of the consumer has not handled yet:
        the round runs the due work of every partition, and each must wait for its consumer.
        """
        limit = until if until is not None else self.clock()
        started = time.perf_counter()
        hints: list[Hint] = []
        with self._transaction() as conn:
            row = self._seam.one(conn, "first_unconsumed_at", {"name": self.config.consumer})
            if row is not None:
                limit = min(limit, row[0].astimezone(UTC))
            session = Session(conn)
            pipeline, schedule = self._pipeline(session, budget=self.config.due_batch)
            hints = pipeline.advance(limit)
            schedule.write_pending()
            self._carry_out(session, pipeline, hints)
            self._events.append_many(conn, session.appends)
            done = schedule.popped
        self.stats.due += done
        self._count(hints)
        if done:
            duration_ms = _elapsed_ms(started)
            self.recorder.round_done("due", done, duration_ms / 1000)
            fields = {"round": "due", "duration_ms": duration_ms, "due": done, "hints": len(hints)}
            _log.info("due round", extra={"fields": fields})
        return done

    # --- hints -> push sends -----------------------------------------------------------------

    def _carry_out(self, session: Session, pipeline: Pipeline, hints: Sequence[Hint]) -> None:
        conn = session.conn
        pushes: list[tuple[Hint, Send, str, set[str]]] = []
        ids: list[str | None] = []
        for hint in hints:
            notification_id: str | None = None
            decision = hint.decision
            if isinstance(decision, Send):
                notification_id = new_id()
                devices = {r.device for r in decision.routes if r.via is Via.PUSH}
                if devices:
                    pushes.append((hint, decision, notification_id, devices))
            ids.append(notification_id)
        if pushes:
            self._insert_pushes(session, pushes)
        if self.sink is not None:
            for hint, notification_id in zip(hints, ids, strict=True):
                self.sink(conn, hint, notification_id)

    def _insert_pushes(
        self, session: Session, pushes: Sequence[tuple[Hint, Send, str, set[str]]]
    ) -> None:
        """One push send per hint and active registration of a routed device (note 11)."""
        conn = session.conn
        recipients = list(dict.fromkeys(hint.recipient for hint, *_ in pushes))
        active = self._registrations.active(conn, recipients)
        params: list[dict[str, Any]] = []
        for hint, decision, notification_id, devices in pushes:
            cleared: list[str] = []
            if hint.kind is Kind.SYNC:
                after = session.synced.pop(hint.recipient, None)
                if after is not None:
                    rows = self._seam.all(
                        conn, "threads_read_after", {"user_id": hint.recipient, "after": after}
                    )
                    cleared = list(dict.fromkeys(r[0] for r in rows))
            params.extend(
                {
                    "notification_id": notification_id,
                    "registration_id": reg.id,
                    "recipient": hint.recipient,
                    "kind": kind_code(hint.kind),
                    "thread": hint.thread,
                    "message": hint.message,
                    "target": hint.target,
                    "quiet": decision.quiet,
                    "count": 0 if hint.kind is Kind.SYNC else (decision.count or 0),
                    "cleared": cleared,
                    "due_at": hint.at,
                    "next_at": hint.at,
                }
                for reg in active.get(hint.recipient, ())
                if reg.device_id in devices
            )
        self._seam.run_many(conn, "insert_push_send", params)
        self.stats.push_sends += len(params)

    def _count(self, hints: Sequence[Hint]) -> None:
        self.recorder.hints(hints)
        for hint in hints:
            decision = hint.decision
            if isinstance(decision, Skip):
                self.stats.decisions["skip"] += 1
                reason = METRIC_REASONS.get(decision.reason)
                if reason is not None:
                    self.stats.skipped[reason] += 1
            elif isinstance(decision, Collect):
                self.stats.decisions["collect"] += 1
            else:
                self.stats.decisions["send"] += 1

    # --- push sends --------------------------------------------------------------------------

    def send_pushes(self) -> int:
        """Run one push round (steps 1 to 3 of seed 001 note 11); return the sends handled.

        Results held from an earlier round are written first; a round claims nothing while
        any is held. When the database fails while results are written, the results not
        written yet stay held (`held_results`) and the round raises: the worker writes them
        when the database is back and never calls the provider for them again.

        Raises:
            StorageError: PostgreSQL failed (results of provider calls made stay held).
        """
        started = time.perf_counter()
        handled = self.write_held_results()
        now = self.clock()
        prepared: list[_Prepared] = []
        with self._transaction() as conn:
            rows = self._seam.all(
                conn,
                "claim_push_sends",
                {
                    "now": now,
                    "lease_until": now + self.config.send_lease,
                    "limit": self.config.send_batch,
                },
            )
            if not rows:
                return handled
            session = Session(conn)
            pipeline, _schedule = self._pipeline(session)
            claimed = [_claimed(row) for row in rows]
            handled += len(claimed)
            prepared = self._step1(session, pipeline, claimed, now)
        results = self._step2(prepared)
        self._held.extend(zip(prepared, results, strict=True))
        self.write_held_results()
        duration_ms = _elapsed_ms(started)
        self.recorder.round_done("push", handled, duration_ms / 1000)
        fields = {"round": "push", "duration_ms": duration_ms, "sends": handled}
        _log.info("push round", extra={"fields": {**fields, "calls": len(prepared)}})
        return handled

    @property
    def held_results(self) -> int:
        """How many provider results wait to be written (the database failed meanwhile)."""
        return len(self._held)

    def write_held_results(self) -> int:
        """Write the provider results held over a database failure, in call order, in one
        transaction; return how many were written.

        Raises:
            StorageError: PostgreSQL failed again; the results stay held (none is written).
        """
        if not self._held:
            return 0
        try:
            written = self._step3(self._held)
        except Exception:
            _log.warning("push results held", extra={"fields": {"held": len(self._held)}})
            raise
        self._held = []
        for item, outcome, action, expired, counted, deactivated in written:
            self._written(item, outcome, action, expired, counted, deactivated)
        return len(written)

    def _step1(
        self, session: Session, pipeline: Pipeline, batch: Sequence[_Claimed], now: datetime
    ) -> list[_Prepared]:
        """Check the claimed sends of a round and build their notifications, set-based: the
        registrations, the recipients' facts and their badges are read for the whole batch
        at once; the skipped sends are finished with one statement."""
        conn = session.conn
        world = pipeline.world
        assert isinstance(world, PgWorld)
        # Facts of all recipients of the claimed sends are loaded together.
        session.batch = tuple(dict.fromkeys(c.recipient for c in batch))
        found = self._registrations.for_send_many(conn, [c.registration_id for c in batch])
        world.prefetch_allowed(
            list(dict.fromkeys((c.recipient, c.thread) for c in batch if c.thread is not None))
        )
        ready: list[tuple[_Claimed, Registration, PushProvider, Kind]] = []
        finished: list[int] = []
        for claimed in batch:
            checked = self._check(world, claimed, found.get(claimed.registration_id), now)
            if isinstance(checked, str):
                finished.append(claimed.id)
                self.stats.skipped[checked] += 1
                self.recorder.push_skipped(checked, claimed.kind)
                _log.info(
                    "push skipped", extra={"fields": {"kind": claimed.kind, "reason": checked}}
                )
            else:
                ready.append(checked)
        if finished:
            self._seam.run(conn, "finish_push_sends", {"ids": finished})
        # Every push carries its recipient's badge at send time: counted for all at once.
        world.prefetch_badges(c.recipient for c, *_ in ready)
        badges: dict[str, list[str]] = {}
        prepared: list[_Prepared] = []
        for claimed, registration, provider, kind in ready:
            recipient = claimed.recipient
            counted = badges.get(recipient)
            if counted is None:
                counted = badges[recipient] = pipeline.counted_threads(recipient, now)
            cleared = tuple(t for t in claimed.cleared if t not in counted)
            notification = Notification(
                id=claimed.notification_id,
                kind=kind,
                thread=claimed.thread,
                message=claimed.message,
                target=claimed.target,
                quiet=claimed.quiet,
                count=claimed.count,
                badge=len(counted),
                cleared=cleared,
                instance_id=self.config.instance_id,
            )
            prepared.append(_Prepared(claimed, registration, provider, notification))
        return prepared

    def _check(
        self,
        world: PgWorld,
        claimed: _Claimed,
        found: tuple[Registration, RegistrationState] | None,
        now: datetime,
    ) -> str | tuple[_Claimed, Registration, PushProvider, Kind]:
        """One claimed send's checks of step 1: the skip reason, or what the send needs."""
        recipient = claimed.recipient
        if found is None:
            return "no_registration"
        registration, state = found
        devices = {d.id for d in world.devices(recipient)}
        if (
            not state.active
            or registration.user_id != recipient
            or registration.device_id not in devices
        ):
            return "no_registration"
        if now - claimed.due_at > self.config.max_age:
            return "expired"
        kind = kind_from_code(claimed.kind)
        info = world.user(recipient)
        if kind in THREAD_KINDS:
            allowed = claimed.thread is not None and world.allowed(recipient, claimed.thread)
        else:
            allowed = info is not None and info.active_human
            if kind is Kind.SECURITY:
                allowed = allowed and registration.device_id != claimed.target
        if not allowed:
            return "no_access"
        provider = self.providers.get(registration.provider)
        if provider is None:
            return "no_provider"
        return claimed, registration, provider, kind

    def _call(self, item: _Prepared) -> SendResult:
        started = time.perf_counter()
        with self._stats_lock:
            self.stats.provider_calls += 1
        try:
            with self._gate.slot():
                return item.provider.send(item.registration, item.notification)
        except Exception as exc:  # a provider's failure is a transient failure (note 12)
            _log.warning(
                "provider call failed",
                extra={
                    "fields": {
                        "provider": item.provider.name,
                        "error_type": type(exc).__name__,
                        "token_ref": item.registration.token_ref,
                    }
                },
            )
            return SendResult(result_class=ResultClass.RETRY)
        finally:
            seconds = time.perf_counter() - started
            self.stats.provider_seconds += seconds
            self.recorder.send_duration(item.provider.name, seconds)

    def _step2(self, prepared: Sequence[_Prepared]) -> list[SendResult]:
        if not prepared:
            return []
        if len(prepared) == 1:
            return [self._call(prepared[0])]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=self.config.max_concurrent_requests,
                thread_name_prefix="notify-push",
            )
        return list(self._pool.map(self._call, prepared))

    def _step3(
        self, results: Sequence[tuple[_Prepared, SendResult]]
    ) -> list[tuple[_Prepared, str, str, bool, bool, str | None]]:
        """Apply provider results to their registrations, in call order, in one transaction:
        the rows locked ``FOR UPDATE`` with one statement (in id order), each result applied to
        the state the results before it left, the changed states, the finished and the retried
        sends written with one statement each. Returns per result what `_written` logs."""
        out: list[tuple[_Prepared, str, str, bool, bool, str | None]] = []
        with self._transaction() as conn:
            states = self._registrations.lock_states(
                conn, [item.claimed.registration_id for item, _r in results]
            )
            changed: dict[str, RegistrationState] = {}
            finished: list[int] = []
            retried: list[tuple[int, datetime]] = []
            for item, result in results:
                claimed = item.claimed
                now = self.clock()
                outcome, action, expired = "registration_gone", Action.DROP.value, False
                state = states.get(claimed.registration_id)
                if state is None:
                    finished.append(claimed.id)
                    out.append((item, outcome, action, expired, False, None))
                    continue
                change = apply_result(state, result, now, self.config.max_failures)
                outcome, action = change.outcome.value, change.action.value
                deactivated = None
                if state.active and not change.state.active:
                    deactivated = change.state.disabled_reason
                if change.state != state:
                    states[claimed.registration_id] = change.state
                    changed[claimed.registration_id] = change.state
                at: datetime | None = None
                if change.action is Action.RETRY:
                    delay = retry_delay(
                        claimed.attempt,
                        self.config.retry_base,
                        self.config.retry_cap,
                        result.retry_after,
                        self._draw_jitter(),
                    )
                    at = retry_at(claimed.due_at, now, delay, self.config.max_age)
                    expired = at is None
                if at is not None:
                    retried.append((claimed.id, at))
                else:
                    finished.append(claimed.id)
                out.append((item, outcome, action, expired, True, deactivated))
            self._registrations.record_many(conn, list(changed.items()))
            if finished:
                self._seam.run(conn, "finish_push_sends", {"ids": finished})
            if retried:
                self._seam.run(
                    conn,
                    "retry_push_sends",
                    {"ids": [i for i, _at in retried], "next_ats": [at for _i, at in retried]},
                )
        return out

    def _written(
        self,
        item: _Prepared,
        outcome: str,
        action: str,
        expired: bool,
        counted: bool,
        deactivated: str | None,
    ) -> None:
        """Count and log one written result: one line per provider call."""
        claimed = item.claimed
        if counted:
            self.stats.sent[outcome] += 1
            self.recorder.push_result(
                item.provider.name, claimed.kind, outcome, action, deactivated
            )
        _log.info(
            "push sent",
            extra={
                "fields": {
                    "provider": item.provider.name,
                    "kind": claimed.kind,
                    "outcome": outcome,
                    "action": action,
                    "attempt": claimed.attempt,
                }
            },
        )
        if expired:
            self.stats.skipped["expired"] += 1
            self.recorder.push_skipped("expired", claimed.kind)
            _log.info("push skipped", extra={"fields": {"kind": claimed.kind, "reason": "expired"}})

    def _draw_jitter(self) -> float:
        value = self._jitter()
        # random.random() is in [0, 1): map it onto [0.5, 1] (R2); a given jitter is taken as is.
        return 0.5 + value / 2 if self._random_jitter else value

    # --- the loop ----------------------------------------------------------------------------

    def run_once(self, *, max_rounds: int = 100, stop: threading.Event | None = None) -> int:
        """Consume up to the head (at most ``max_rounds`` rounds), then run due work and one
        push round, then the extra rounds (the inbox); return the work done (0: idle).

        Results held over a database failure are written first. When that fails, consumer
        and due-work rounds still run (they claim no push send) and the call then raises the
        failure: no push round runs while results are held. With ``stop``, no round starts
        once it is set: the call returns after the round in progress.
        """
        self._round = "push"
        held_failure: Exception | None = None
        work = 0
        try:
            work = self.write_held_results()
        except Exception as exc:  # raised below, after the rounds that may run
            held_failure = exc
        for _ in range(max_rounds):
            if stop is not None and stop.is_set():
                return work
            self._round = "consumer"
            handled = self.consume()
            work += handled
            if handled == 0:
                break
        if stop is not None and stop.is_set():
            return work
        self._round = "due"
        work += self.run_due()
        if held_failure is not None:
            self._round = "push"
            raise held_failure
        if stop is not None and stop.is_set():
            return work
        self._round = "push"
        work += self.send_pushes()
        for extra in self._rounds:
            if stop is not None and stop.is_set():
                return work
            # A round may name itself (``name``, e.g. the mail drain's "mail"); else "inbox".
            name = str(getattr(extra, "name", "inbox"))
            self._round = name
            started = time.perf_counter()
            # A round that takes ``stop`` (the fan-out, the mail drain) stops between units.
            if "stop" in inspect.signature(extra).parameters:
                done = cast(Any, extra)(self._connection(), stop=stop)
            else:
                done = extra(self._connection())
            work += done
            if done:
                duration_ms = _elapsed_ms(started)
                self.recorder.round_done(name, done, duration_ms / 1000)
                fields = {"round": name, "duration_ms": duration_ms, "work": done}
                _log.info(f"{name} round", extra={"fields": fields})
        return work

    def run(self, stop: threading.Event) -> None:
        """Work until ``stop`` is set; then finish the round in progress and return.

        A failed round (PostgreSQL unreachable, a bug in a handler) rolls back, is logged with
        its error type, code, SQLSTATE and PostgreSQL's message, recorded for
        ``notify db status`` when the database takes the record, and tried again after a
        pause. Provider results the database did not take are held and written first when
        it is back; at the stop, results still held are tried once more.
        """
        pause = self.config.poll_interval.total_seconds()
        failures = 0
        while not stop.is_set():
            try:
                work = self.run_once(stop=stop)
                failures = 0
                self._record_failure()
            except Exception as exc:  # a failed round is retried; the loop must go on
                failures += 1
                self._failed(exc, failures)
                stop.wait(min(30.0, pause * 2**failures))
                continue
            if work == 0:
                stop.wait(self._pause(pause))
        if self._held:
            try:
                self.write_held_results()
            except Exception as exc:  # the worker ends: these pushes may go once more
                self._failed(exc, failures + 1)
                _log.error("push results lost", extra={"fields": {"held": len(self._held)}})
        self.close()

    def _pause(self, pause: float) -> float:
        """The idle pause: ``poll_interval``, shorter when a round wakes earlier (``next_wake``,
        e.g. the mail drain at the next email's due time)."""
        now = self.clock()
        for extra in self._rounds:
            next_wake = getattr(extra, "next_wake", None)
            wake = next_wake() if callable(next_wake) else None
            if isinstance(wake, datetime):
                pause = min(pause, max(0.0, (wake - now).total_seconds()))
        return pause

    def _failed(self, exc: Exception, failures: int) -> None:
        """Log a failed round with its cause and record it for ``notify db status``."""
        self.stats.failures += 1
        self.recorder.round_failed(self._round)
        fields: dict[str, Any] = {
            "round": self._round,
            "error_type": type(exc).__name__,
            "failures": failures,
        }
        code, sqlstate, message = "error", None, type(exc).__name__
        if isinstance(exc, NotifyError):
            code, message = exc.code, exc.message
            fields["code"] = code
        if isinstance(exc, StorageError):
            sqlstate = exc.sqlstate
            if exc.code == "storage_unavailable":
                # The driver's text names the server's address: the code says enough.
                message = "cannot reach PostgreSQL"
            if exc.sqlstate:
                fields["sqlstate"] = exc.sqlstate
            if exc.server_message:
                fields["pg_message"] = exc.server_message
                message = exc.server_message
            if sqlstate == "25P03":  # idle in a transaction past partition_takeover
                fields["taken_over"] = True
                message += ": its partition was taken over (its claims too)"
        if self._held:
            fields["held"] = len(self._held)
        _log.error("round failed", extra={"fields": fields})
        self._drop_connection()
        self._unrecorded = {
            "name": self.config.consumer,
            "failed_at": _now(),
            "round": self._round,
            "code": code,
            "sqlstate": sqlstate,
            "message": message,
        }
        self._record_failure()

    def _record_failure(self) -> None:
        """Write the last failure for ``notify db status`` (once the database takes it)."""
        if self._unrecorded is None:
            return
        try:
            with self._transaction() as conn:
                # A database made read-only by its default still takes this one row.
                self._seam.run(conn, "read_write")
                self._seam.run(conn, "record_consumer_failure", self._unrecorded)
            self._unrecorded = None
        except Exception as again:  # unreachable: written after the next good round
            self._drop_connection()
            _log.debug(
                "failure not recorded yet",
                extra={"fields": {"error_type": type(again).__name__}},
            )

    def _drop_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None
