"""The push worker: the pipeline on PostgreSQL (docs/postgresql.md), from the log to push sends.

`Worker` runs the push path's rounds in the loop of `notify_pg.rounds.loop` (each round its
own transaction, or, for pushes, three), with the API hosts and tests use:

- **consumer round** (`notify_pg.push.consume.ConsumeRound`; one batch: `Worker.consume`):
  the next events of one partition (or of the worker's share of the free partitions) through
  `notify_core.hints.pipeline.Pipeline.handle`, the hints carried out, the cursor moved, all
  in one transaction, so every hint arises exactly once. With ``WorkerConfig.partitions`` = N,
  N consumers (on up to N workers) run side by side and together give exactly the hints of
  one consumer (`notify_core.replay.partitions`).
- **due-work round** (`Worker.run_due`, `notify_pg.push.due.DueRound`): `Pipeline.advance`
  up to now, never past the first event some partition has not handled yet.
- **push round** (`Worker.send_pushes`, `notify_pg.push.send.SendRound`):
  claim and check, call the providers outside any transaction, write the results; results
  the database did not take are held and written first when it is back.

The settings, ports and counters the rounds share are one value, `Worker.push`
(`notify_pg.push.context.PushContext`): a host or a test that changes a setting changes it
there (``worker.push.providers = ...``), and every round sees it. Logs carry counts, kind
codes, reasons, outcomes, provider names and error types: never a person, a thread, a
message or a token (a token's hash prefix at most).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime

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
from notify_pg.rounds.connection import RoundConnection
from notify_pg.rounds.loop import Loop, Round
from notify_pg.stores.ports import PipelineHostPorts

__all__ = ["Clock", "HintSink", "Worker", "WorkerConfig", "WorkerStats", "worker_connection"]


def worker_connection(
    connect: Callable[[], Conn], config: WorkerConfig, *, schema: str = DEFAULT_SCHEMA
) -> RoundConnection:
    """The connection the rounds of a worker share, bounded by ``config``'s partition
    takeover and statement timeouts.

    Build it first when rounds of other wings run in the worker's loop: they take it, and
    `Worker` takes it in place of ``connect`` (`notify_pg.worker.build.build_worker` does so).
    """
    return RoundConnection(
        connect,
        schema=schema,
        idle_timeout=config.partition_takeover,
        statement_timeout=config.statement_timeout,
    )


class Worker:
    """Consumer, due work and push sends of one process on one database, in one loop.

    Args:
        connect: opens a new connection in autocommit mode (called again after a failure);
            or the worker's connection built beforehand (`worker_connection`), which the
            ``rounds`` given here run on too.
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
        on_event: a test hook, called in the consumer round after each event is handled.
        gate: the limit on concurrent provider requests; by default the process's gate
            (`ProviderGate.for_process`), shared by every worker of the process.
        rounds: more rounds of the loop (`notify_pg.rounds.loop.Round`), run after the push
            round (the inbox's `notify_pg.inbox.rounds.FanOutRound` and ``PurgeRound``, the
            mail drain's `notify_pg.mail.rounds.MailRound`, a host's own); those that use
            the database take the worker's connection (pass it as ``connect``). Their
            failures are recorded under the round's ``name``; a round with ``next_wake()``
            shortens the idle pause to the instant it returns.
        recorder: receives the metric edges of the rounds (`notify_pg.push.recorder.Recorder`,
            e.g. `notify_pg.ops.metrics.OtelRecorder`); by default nothing is recorded.

    Attributes:
        connection: the connection every round of the worker runs on.
        push: what the push rounds share (`PushContext`: settings, ports, counters).
        stats: the push rounds' counters (the `WorkerStats` of ``push``).
        loop: the loop of `run`: held results, consumer, due work, push sends, ``rounds``.

    Example:
        >>> worker = Worker(lambda: psycopg.connect(dsn, autocommit=True), ReferenceHost(),
        ...                 providers=[FakeProvider("apns")])  # doctest: +SKIP
        >>> worker.run(stop=threading.Event())  # doctest: +SKIP
    """

    def __init__(
        self,
        connect: Callable[[], Conn] | RoundConnection,
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
        rounds: Sequence[Round] = (),
        recorder: Recorder | None = None,
    ) -> None:
        self.schema = schema
        config = config or WorkerConfig()
        self.connection = (
            connect
            if isinstance(connect, RoundConnection)
            else worker_connection(connect, config, schema=schema)
        )
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
        self.stats = self.push.stats
        self._consumer = ConsumeRound(self.push)
        self._due = DueRound(self.push)
        self._send = SendRound(self.push)
        self.loop = Loop(
            [HeldResults(self._send), self._consumer, self._due, self._send, *rounds],
            connection=self.connection,
            name=config.consumer,
            schema=schema,
            poll_interval=config.poll_interval,
            clock=lambda: self.push.clock(),
            recorder=self.push.recorder,
            on_failure=self._count_failure,
        )

    def _count_failure(self, round_name: str, exc: Exception) -> None:
        self.push.stats.failures += 1

    # --- what the host and tests reach -------------------------------------------------------

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
        then on (a shared advisory lock): a batch takes up to the worker's share of the free
        partitions (`consume`).

        Raises:
            PartitionError: ``partition_change_refused``, the cursors stand at different
                positions (the message names them); nothing is changed.
            StorageError: PostgreSQL failed.
        """
        self._consumer.prepare()

    def consume(self) -> int:
        """Consume one batch of events (one transaction); return the number of events handled.

        The batch takes the most lagging partition that no other worker is consuming, and
        with it the other free partitions at the same position up to this worker's share
        (the partitions over the consumer's workers, rounded up): they are handled together,
        as one partition of their recipients. 0: that partition is at the head (so all free
        ones are), or every partition is in another worker's batch.

        Raises:
            PartitionError: ``partition_change_refused`` (see `prepare`), or
                ``partition_count_changed``: another worker replaced the cursors with another
                count since this worker prepared them.
            StorageError: PostgreSQL failed; the batch is rolled back.
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

    def run_once(self, *, max_batches: int = 100, stop: threading.Event | None = None) -> int:
        """Run every round of the loop once: consume up to the head (at most ``max_batches``
        batches, `consume`), then due work, one push round and the extra ``rounds``; return
        the work done (0: idle).

        Results held over a database failure are written first. When that fails, consumer
        and due-work rounds still run (they claim no push send) and the call then raises the
        failure: no push round runs while results are held. With ``stop``, no round starts
        once it is set: the call returns after the round in progress.
        """
        before, self._consumer.max_batches = self._consumer.max_batches, max_batches
        try:
            return self.loop.run_once(stop)
        finally:
            self._consumer.max_batches = before

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
