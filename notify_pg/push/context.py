"""What the push rounds of one worker share: settings, ports, the connection, counters.

`PushContext` is built once per worker (`notify_pg.push.worker.Worker`) and handed to its
rounds (`notify_pg.push.consume`, `due`, `send`): each round reads the settings and ports
from it when it runs, so a host or a test that changes one on the worker (``providers``,
``sink``, ``config`` ...) changes it for every round. It also holds what the consumer and
due-work rounds do alike with the hints they decide (`PushContext.carry_out`).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple, Protocol

import attrs

from notify_core.events.log import Event
from notify_core.hints.decide import METRIC_REASONS, Collect, Policy, Send, Skip, Via
from notify_core.hints.pipeline import Hint, Pipeline
from notify_core.replay.partitions import Partition, Partitions
from notify_core.values.errors import UsageError
from notify_core.values.kinds import Kind, kind_code
from notify_pg.db.ids import new_id
from notify_pg.db.seam import Conn, Seam, text_array
from notify_pg.push.preferences import PgPreferences
from notify_pg.push.providers import ProviderGate, PushProvider
from notify_pg.push.recorder import NullRecorder, Recorder
from notify_pg.push.records import PgRecords, held_hints, write_record_rows
from notify_pg.push.schedule import PgSchedule
from notify_pg.push.session import Session
from notify_pg.push.world import PgWorld
from notify_pg.rounds.connection import RoundConnection
from notify_pg.stores.events import EventLog
from notify_pg.stores.facts import FactsReader
from notify_pg.stores.ports import PipelineHostPorts
from notify_pg.stores.preferences import PreferenceRepository
from notify_pg.stores.registrations import RegistrationRepository
from notify_pg.stores.values import StoreConfig

__all__ = ["Clock", "HintSink", "PushContext", "StagedPush", "WorkerConfig", "WorkerStats"]

#: Returns the current instant (aware); tests hand in a fake clock.
Clock = Callable[[], datetime]


def now_utc() -> datetime:
    """The current instant (the default clock)."""
    return datetime.now(UTC)


class HintSink(Protocol):
    """Receives every hint of a round inside the round's transaction (the host's hand-off).

    Called once per hint decision in order, with the notification id of a send (``None`` for
    collect and skip). A host uses it for the ``gateway`` routes (live connections) and its
    ``notification.created`` events; it runs in the round's transaction, so what it writes
    commits or rolls back with the round. It must deliver every ``gateway`` route of a send
    or raise: a raise rolls the round back and the worker retries it (fail closed), so a
    live route is never dropped. A ``not_allowed`` skip of an event's own candidate must
    leave no trace that names the person (D2: who may not read the thread must not learn of
    it either). It must not change the host facts the pipeline reads (people, places, read
    rights, devices, settings): a consumer round reads them once, at its start (`Session.at`).
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
    """The worker's settings (in brackets: the configuration key a host may map each to).

    Args:
        consumer: the name of the consumer's cursors.
        partitions: how many recipient partitions the consumer is split into, each with its
            own cursor (`notify_core.replay.partitions`); consumer rounds of different partitions
            run
            side by side on several workers. Every worker of a consumer must use the same
            count; changing it is allowed only while all cursors stand at one position
            (`Worker.prepare`). The default 2 lets a second worker run consumer rounds too;
            a lone worker takes both partitions in each round and runs the statements of
            one partition (bench/bench_pg_pipeline.py, docs/postgresql.md).
        batch_size: events per consumer round (``consumer.batch_size``); a round that takes
            k of the P partitions reads up to P/k times as many (`ConsumeRound.consume`).
        due_batch: due work per due-work transaction.
        send_batch: push sends claimed per push round.
        poll_interval: the pause of `Worker.run` when nothing is to do
            (``consumer.poll_interval``).
        max_concurrent_requests: provider requests at once per process
            (``push.max_concurrent_requests``).
        batch_sends: hand a round's pushes of APNs and FCM to the provider in one batch
            (`notify_pg.push.providers.fanout`; the default: it measured faster and needs less
            CPU per push, docs/push-providers.md); False: one call per push on the worker's
            pool for every provider.
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
        instance_id: the ID of the host's instance, carried by every push (R3);
            ``None`` leaves it out (a host that serves one instance per app).
    """

    consumer: str = "push"
    partitions: int = attrs.field(default=2, validator=_at_least_one)
    batch_size: int = 100
    due_batch: int = 100
    send_batch: int = 512
    poll_interval: timedelta = timedelta(seconds=1)
    max_concurrent_requests: int = 256
    batch_sends: bool = True
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
    """What a worker did, in counts (the metrics of docs/operators.md).

    ``events`` counts the events the worker's consumer read from the log (a batch that
    takes several partitions at one position reads each event once); ``partition_events``
    counts them once per partition the batch took, so over all workers of a consumer it
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


#: The array parameters of `insert_push_sends`, in the order of a row of `insert_pushes`.
_PUSH_SEND_COLUMNS = (
    "notification_ids",
    "registration_ids",
    "recipients",
    "kinds",
    "threads",
    "messages",
    "targets",
    "quiets",
    "counts",
    "cleared",
    "due_ats",
    "records",
)


class StagedPush(NamedTuple):
    """A send hint's push sends, not written yet (`PushContext.carry_out` with ``defer``)."""

    hint: Hint
    decision: Send
    notification_id: str
    devices: frozenset[str]
    cleared: list[str]


class _Owned:
    """Whether a recipient belongs to some partitions, remembered per person (the partition
    is a hash: a batch tests every reader of every fan-out)."""

    __slots__ = ("_memo", "_owns")

    def __init__(self, owns: Partition | Partitions) -> None:
        self._owns = owns
        self._memo: dict[str, bool] = {}

    def __call__(self, recipient: str) -> bool:
        known = self._memo.get(recipient)
        if known is None:
            known = self._memo[recipient] = self._owns(recipient)
        return known


class PushContext:
    """The settings, ports, connection and counters the push rounds of one worker share.

    Args:
        connection: the worker's connection (`notify_pg.rounds.RoundConnection`).
        host: the host's ports.
        schema: the library's schema.
        policy: the instance's policy.
        config: the worker's settings.
        clock: the current instant.
        providers: the push providers by name.
        sink: receives every hint in the round's transaction (``None``: live routes fail
            closed, every active device gets ``push``).
        jitter: draws the retry jitter (``None``: random, mapped onto [0.5, 1]).
        on_event: a test hook, called in the consumer round after each event.
        gate: the limit on concurrent provider requests (default: the process's gate).
        recorder: receives the metric edges of the rounds.
    """

    def __init__(
        self,
        connection: RoundConnection,
        host: PipelineHostPorts,
        *,
        schema: str,
        policy: Policy,
        config: WorkerConfig,
        clock: Clock,
        providers: Mapping[str, PushProvider],
        sink: HintSink | None,
        jitter: Callable[[], float] | None,
        on_event: Callable[[Conn, Event | None], None] | None,
        gate: ProviderGate | None,
        recorder: Recorder | None,
    ) -> None:
        self.connection = connection
        self.host = host
        self.schema = schema
        self.policy = policy
        self.config = config
        self.clock = clock
        self.providers = providers
        self.sink = sink
        self.on_event = on_event
        self.recorder: Recorder = recorder or NullRecorder()
        self.stats = WorkerStats()
        self.stats_lock = threading.Lock()
        self.seam = Seam("notify_pg", schema)
        self.jitter = jitter or random.Random().random
        self.random_jitter = jitter is None
        store_config = StoreConfig(instance_default_level=policy.instance_default_level)
        self.facts = FactsReader(host, store_config, schema)
        self.events = EventLog(schema)
        self.preferences = PreferenceRepository(host, self.events, schema)
        self.registrations = RegistrationRepository(schema)
        self.gate = gate or ProviderGate.for_process(config.max_concurrent_requests)
        #: Providers with registrations this worker has warned about (it serves none of that
        #: name): the warning comes once, not per push.
        self.unserved_warned: set[str] = set()

    def pipeline(
        self,
        session: Session,
        *,
        wait: bool = False,
        budget: int | None = None,
        owns: Partition | Partitions | None = None,
    ) -> tuple[Pipeline, PgSchedule]:
        """The pipeline of one round's transaction on the tables, with its schedule.

        Args:
            session: the round's transaction.
            wait: whether due work waits for rows other workers hold (the consumer round).
            budget: due work per transaction at most.
            owns: the partitions of the recipients the round decides for (``None``: all).
        """
        schedule = PgSchedule(session, self.schema, wait=wait, budget=budget, owns=owns)
        # One partition test per person and batch (a fan-out asks for every reader per event).
        owned = None if owns is None else _Owned(owns)
        pipeline = Pipeline(
            policy=self.policy,
            world=PgWorld(
                session,
                self.host,
                self.schema,
                self.facts,
                live=self.sink is not None,
                owns=owned,
            ),
            prefs=PgPreferences(
                session,
                self.host,
                self.facts,
                self.preferences,
                self.policy.instance_default_level,
            ),
            schedule=schedule,
            owns=owned,
            records=PgRecords(session, self.facts),
        )
        world, prefs = pipeline.world, pipeline.prefs
        assert isinstance(world, PgWorld) and isinstance(prefs, PgPreferences)
        schedule.prefetch = lambda dues: world.prefetch_due(dues, prefs)
        return pipeline, schedule

    # --- hints -> push sends -----------------------------------------------------------------

    def carry_out(
        self,
        session: Session,
        pipeline: Pipeline,
        hints: Sequence[Hint],
        *,
        defer: list[StagedPush] | None = None,
    ) -> None:
        """Write the push sends of a round's hints and hand every hint to the sink, in the
        round's transaction.

        With ``defer`` the push sends are added to that list instead of being written: a
        consumer round writes those of all its events with one statement at its end
        (`insert_pushes`), in the same transaction and order. What a send depends on in
        this transaction (the ``after_seq`` of the badge sync it carries out) is taken now.
        """
        conn = session.conn
        staged: list[StagedPush] = []
        ids: list[str | None] = []
        for hint in hints:
            notification_id: str | None = None
            decision = hint.decision
            if isinstance(decision, Send):
                notification_id = new_id()
                devices = {r.device for r in decision.routes if r.via is Via.PUSH}
                if devices:
                    staged.append(self._staged(session, hint, decision, notification_id, devices))
            ids.append(notification_id)
        session.holds.extend(held_hints(session, hints))
        if staged:
            if defer is None:
                self.insert_pushes(session, staged)
            else:
                defer.extend(staged)
        if self.sink is not None:
            for hint, notification_id in zip(hints, ids, strict=True):
                self.sink(conn, hint, notification_id)

    def _staged(
        self, session: Session, hint: Hint, decision: Send, notification_id: str, devices: set[str]
    ) -> StagedPush:
        """One hint's push sends as they will be written (the cleared threads of a sync)."""
        cleared: list[str] = []
        if hint.kind is Kind.SYNC:
            after = session.synced.pop(hint.recipient, None)
            if after is not None:
                rows = self.seam.all(
                    session.conn,
                    "threads_read_after",
                    {"user_id": hint.recipient, "after": after},
                )
                cleared = list(dict.fromkeys(r[0] for r in rows))
        return StagedPush(hint, decision, notification_id, frozenset(devices), cleared)

    def insert_pushes(self, session: Session, pushes: Sequence[StagedPush]) -> None:
        """One push send per hint and active registration of a routed device, all in one
        statement (`insert_push_sends`: a column per array, rows in the order of ``pushes``)."""
        if not pushes:
            return
        conn = session.conn
        recipients = list(dict.fromkeys(p.hint.recipient for p in pushes))
        active = self.registrations.active(conn, recipients)
        rows = [
            (
                notification_id,
                reg.id,
                hint.recipient,
                kind_code(hint.kind),
                hint.thread,
                hint.message,
                hint.target,
                decision.quiet,
                0 if hint.kind is Kind.SYNC else (decision.count or 0),
                text_array(cleared),
                hint.at,
                decision.record,
            )
            for hint, decision, notification_id, devices, cleared in pushes
            for reg in active.get(hint.recipient, ())
            if reg.device_id in devices
        ]
        if not rows:
            return
        columns = map(list, zip(*rows, strict=True))
        self.seam.run(
            conn, "insert_push_sends", dict(zip(_PUSH_SEND_COLUMNS, columns, strict=True))
        )
        self.stats.push_sends += len(rows)

    def write_records(self, session: Session) -> None:
        """Write what the round's decisions counted for preference records (M4, M6): the push
        deliveries per day and the hints records held back (nothing when there is none)."""
        write_record_rows(self.seam, session, session.holds)
        session.holds.clear()

    def count(self, hints: Sequence[Hint]) -> None:
        """Count a round's hints by decision and skip reason (stats and metrics)."""
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

    def draw_jitter(self) -> float:
        """The retry jitter in [0.5, 1] (R2)."""
        value = self.jitter()
        # random.random() is in [0, 1): map it onto [0.5, 1] (R2); a given jitter is taken as is.
        return 0.5 + value / 2 if self.random_jitter else value
