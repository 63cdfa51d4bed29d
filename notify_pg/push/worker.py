"""The push worker: the pipeline on PostgreSQL (docs/postgresql.md), from the log to push sends.

`Worker` is the push path's rounds in the loop of `notify_pg.rounds.loop` (each round its own
transaction, or, for pushes, three), with the API hosts and tests use:

- **consumer round** (`Worker.consume`, `notify_pg.push.consume.ConsumeRound`): the next
  events of one partition (or of the worker's share of the free partitions) through
  `notify_core.hints.pipeline.Pipeline.handle`, the hints carried out, the cursor moved, all in
  one transaction, so every hint arises exactly once. With ``WorkerConfig.partitions`` = N, N rounds
  (on up to N workers) run side by side and together give exactly the hints of one
  consumer (`notify_core.replay.partitions`).
- **due-work round** (`Worker.run_due`, `notify_pg.push.due.DueRound`): `Pipeline.advance`
  up to now, never past the first event some partition has not handled yet.
- **push round** (`Worker.send_pushes`, `notify_pg.push.send.SendRound`):
  claim and check, call the providers outside any transaction, write the results; results
  the database did not take are held and written first when it is back.

The settings, counters and the host's hand-off the rounds share are in
`notify_pg.push.context` (re-exported here). Logs carry counts, kind codes, reasons,
outcomes, provider names and error types: never a person, a thread, a message or a token (a
token's hash prefix at most).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Generic, TypeVar

from notify_core.events.log import Event
from notify_core.hints.decide import Policy
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn
from notify_pg.push.consume import ConsumeRound
from notify_pg.push.context import (
    Clock,
    HintSink,
    PushContext,
    WorkerConfig,
    WorkerStats,
    now_utc,
)
from notify_pg.push.due import DueRound
from notify_pg.push.providers import ProviderGate, PushProvider
from notify_pg.push.recorder import Recorder
from notify_pg.push.send import HeldResults, SendRound
from notify_pg.rounds.adapter import ConnectionRound
from notify_pg.rounds.connection import RoundConnection
from notify_pg.rounds.loop import Loop, Round
from notify_pg.stores.ports import PipelineHostPorts

__all__ = ["Clock", "HintSink", "Worker", "WorkerConfig", "WorkerStats"]

_T = TypeVar("_T")


class _Shared(Generic[_T]):
    """An attribute of the worker that is the push rounds' shared one (`PushContext`): set
    on the worker, every round sees the new value."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, worker: Worker, owner: type[Worker] | None = None) -> _T:
        value: _T = getattr(worker.push, self.attribute)
        return value

    def __set__(self, worker: Worker, value: _T) -> None:
        setattr(worker.push, self.attribute, value)


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
            hint goes only to a gateway that nobody delivers).
        jitter: draws the retry jitter in [0.5, 1] (R2); random by default.
        on_event: a test hook, called in the round after each event is handled.
        gate: the limit on concurrent provider requests; by default the process's gate
            (`ProviderGate.for_process`), shared by every worker of the process.
        rounds: more rounds run after the push round on the worker's connection: callables
            of the connection returning the work they did (the inbox's fan-out,
            `notify_pg.inbox.fanout.InboxRound`; the mail drain, `notify_pg.mail.drain.MailRound`;
            see `notify_pg.rounds.adapter.ConnectionRound`), or rounds of the loop
            (`notify_pg.rounds.loop.Round`). Their failures are recorded under the round's
            ``name`` (default ``inbox``). A round with ``next_wake()`` shortens the idle
            pause to the instant it returns. `notify_pg.worker.build` assembles them.
        recorder: receives the metric edges of the rounds (`notify_pg.push.recorder.Recorder`,
            e.g. `notify_pg.ops.metrics.OtelRecorder`); by default nothing is recorded.

    Example:
        >>> worker = Worker(lambda: psycopg.connect(dsn, autocommit=True), ReferenceHost(),
        ...                 providers=[FakeProvider("apns")])  # doctest: +SKIP
        >>> worker.run(stop=threading.Event())  # doctest: +SKIP
    """

    policy: _Shared[Policy] = _Shared("policy")
    config: _Shared[WorkerConfig] = _Shared("config")
    clock: _Shared[Clock] = _Shared("clock")
    host: _Shared[PipelineHostPorts] = _Shared("host")
    providers: _Shared[Mapping[str, PushProvider]] = _Shared("providers")
    sink: _Shared[HintSink | None] = _Shared("sink")
    on_event: _Shared[Callable[[Conn, Event | None], None] | None] = _Shared("on_event")
    recorder: _Shared[Recorder] = _Shared("recorder")
    stats: _Shared[WorkerStats] = _Shared("stats")
    _gate: _Shared[ProviderGate] = _Shared("gate")

    def __init__(
        self,
        connect: Callable[[], Conn],
        host: PipelineHostPorts,
        *,
        schema: str = DEFAULT_SCHEMA,
        policy: Policy | None = None,
        config: WorkerConfig | None = None,
        clock: Clock = now_utc,
        providers: Sequence[PushProvider] = (),
        sink: HintSink | None = None,
        jitter: Callable[[], float] | None = None,
        on_event: Callable[[Conn, Event | None], None] | None = None,
        gate: ProviderGate | None = None,
        rounds: Sequence[Callable[[Conn], int] | Round] = (),
        recorder: Recorder | None = None,
    ) -> None:
        self.schema = schema
        config = config or WorkerConfig()
        #: The connection every round of the worker runs on.
        self.connection = RoundConnection(
            connect,
            schema=schema,
            idle_timeout=config.partition_takeover,
            statement_timeout=config.statement_timeout,
        )
        #: What the push rounds share (settings, ports, counters).
        self.push = PushContext(
            self.connection,
            host,
            schema=schema,
            policy=policy or Policy(),
            config=config,
            clock=clock,
            providers={p.name: p for p in providers},
            sink=sink,
            jitter=jitter,
            on_event=on_event,
            gate=gate,
            recorder=recorder,
        )
        self._consumer = ConsumeRound(self.push)
        self._due = DueRound(self.push)
        self._send = SendRound(self.push)
        extras = [self._round_of(r) for r in rounds]
        #: The loop of `run`: held results, consumer, due work, push sends, the extra rounds.
        self.loop = Loop(
            [*self.push_rounds(), *extras],
            connection=self.connection,
            name=config.consumer,
            schema=schema,
            poll_interval=config.poll_interval,
            clock=lambda: self.push.clock(),
            recorder=self.push.recorder,
            on_failure=self.count_failure,
        )

    def _round_of(self, extra: Callable[[Conn], int] | Round) -> Round:
        if isinstance(extra, Round):
            return extra
        return ConnectionRound(extra, self.connection, self.push.recorder)

    def push_rounds(self) -> list[Round]:
        """The push path's rounds in the order of a pass: held results, consumer, due work,
        push sends (`notify_pg.worker.build` puts them before the inbox and mail rounds)."""
        return [HeldResults(self._send), self._consumer, self._due, self._send]

    def count_failure(self, round_name: str, exc: Exception) -> None:
        """Count a failed round in `stats` (the loop's ``on_failure``)."""
        self.push.stats.failures += 1

    # --- what the host and tests reach -------------------------------------------------------

    @property
    def _conn(self) -> Conn | None:
        return self.connection.conn

    @property
    def _connect(self) -> Callable[[], Conn]:
        return self.connection.connect

    def close(self) -> None:
        """Close the worker's connection and its provider threads."""
        self.connection.close()
        self._send.close()

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
        self._consumer.prepare()

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
        return self._consumer.consume()

    def run_due(self, until: datetime | None = None) -> int:
        """Run one due-work round up to ``until`` (default: now); return the work done.

        Never past the first event that some partition of the consumer has not handled yet:
        the round runs the due work of every partition, and each must wait for its consumer.
        """
        return self._due.run_due(until)

    def send_pushes(self) -> int:
        """Run one push round (claim and check, send, write the results); return the sends handled.

        Results held from an earlier round are written first; a round claims nothing while
        any is held. When the database fails while results are written, the results not
        written yet stay held (`held_results`) and the round raises: the worker writes them
        when the database is back and never calls the provider for them again.

        Raises:
            StorageError: PostgreSQL failed (results of provider calls made stay held).
        """
        return self._send.send_pushes()

    @property
    def held_results(self) -> int:
        """How many provider results wait to be written (the database failed meanwhile)."""
        return self._send.held_results

    def write_held_results(self) -> int:
        """Write the provider results held over a database failure, in call order, in one
        transaction; return how many were written.

        Raises:
            StorageError: PostgreSQL failed again; the results stay held (none is written).
        """
        return self._send.write_held_results()

    # --- the loop ----------------------------------------------------------------------------

    def run_once(self, *, max_rounds: int = 100, stop: threading.Event | None = None) -> int:
        """Consume up to the head (at most ``max_rounds`` rounds), then run due work and one
        push round, then the extra rounds (the inbox); return the work done (0: idle).

        Results held over a database failure are written first. When that fails, consumer
        and due-work rounds still run (they claim no push send) and the call then raises the
        failure: no push round runs while results are held. With ``stop``, no round starts
        once it is set: the call returns after the round in progress.
        """
        before, self._consumer.max_rounds = self._consumer.max_rounds, max_rounds
        try:
            return self.loop.run_once(stop)
        finally:
            self._consumer.max_rounds = before

    def run(self, stop: threading.Event) -> None:
        """Work until ``stop`` is set; then finish the round in progress and return.

        A failed round (PostgreSQL unreachable, a bug in a handler) rolls back, is logged with
        its error type, code, SQLSTATE and PostgreSQL's message, recorded for
        ``notify db status`` when the database takes the record, and tried again after a
        pause (`notify_pg.rounds.loop.Loop`). Provider results the database did not take are
        held and written first when it is back; at the stop, results still held are tried
        once more.
        """
        self.loop.run(stop)
