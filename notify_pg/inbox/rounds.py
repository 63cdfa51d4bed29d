"""The inbox's rounds of a worker's loop: the fan-out of the outbox, and the purge.

- `FanOutRound`: fan out until the outbox has nothing to claim (at most ``max_claims``
  claims per pass, so the worker's other rounds go on), stopping between events at the
  loop's stop;
- `PurgeRound`: the purge of H3 (`notify_pg.inbox.reads.purge`) at the first pass and then
  once per ``every`` (a day by default).

Both run on the worker's connection (autocommit: each claim, batch and purge step commits on
its own) and are `notify_pg.rounds.loop.Round` objects; `notify_pg.worker.build` puts them in
the loop (a host's own worker hands them to `notify_pg.push.worker.Worker` as ``rounds``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import purge
from notify_pg.rounds.connection import RoundConnection
from notify_pg.rounds.loop import RoundRecorder, log_round

__all__ = ["FanOutRound", "PurgeRound"]


class FanOutRound:
    """The fan-out of the inbox's outbox, as a round of the loop.

    Args:
        fanout: the fan-out of this worker.
        connection: the worker's connection.
        recorder: receives ``round_done`` (metrics).
        max_claims: fan-out claims (of up to 50 events each) per pass at most.
    """

    #: The round's name in logs, metrics and ``notify db status``.
    name = "inbox"

    def __init__(
        self,
        fanout: InboxFanOut,
        connection: RoundConnection,
        recorder: RoundRecorder,
        *,
        max_claims: int = 20,
    ) -> None:
        self.fanout = fanout
        self.connection = connection
        self.recorder = recorder
        self.max_claims = max_claims

    def run(self, stop: threading.Event) -> int:
        """Fan out claims until none is left, ``max_claims`` or the stop (between events);
        return the events finished."""
        started = time.perf_counter()
        conn = self.connection.get()
        work = self.fanout.drain(conn, max_claims=self.max_claims, stop=stop)
        log_round(self.recorder, self.name, work, started)
        return work


class PurgeRound:
    """The inbox's purge (H3) on a schedule: at the first pass, then once per ``every``.

    Args:
        fanout: the fan-out of this worker (its host gives the retention, its schema the
            tables).
        connection: the worker's connection.
        recorder: receives ``round_done`` (metrics).
        every: the pause between two purges.
        clock: the current instant.
    """

    #: The round's name in logs, metrics and ``notify db status``: the inbox's
    #: (``consumer_failures.round`` takes the names of migration 0015 only, and the metrics
    #: keep their labels).
    name = "inbox"

    def __init__(
        self,
        fanout: InboxFanOut,
        connection: RoundConnection,
        recorder: RoundRecorder,
        *,
        every: timedelta = timedelta(days=1),
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.fanout = fanout
        self.connection = connection
        self.recorder = recorder
        self.every = every
        self.clock = clock
        #: When the next purge is due (``None``: at the first pass).
        self.next_purge: datetime | None = None
        #: Rows deleted so far, by table.
        self.purged: dict[str, int] = {"entries": 0, "outbox": 0, "deliveries": 0}

    def run(self, stop: threading.Event) -> int:
        """Purge when due; return the rows deleted (0 when not due). Each batch commits on its
        own, so a stop or failure in between leaves the rest to the next purge."""
        now = self.clock()
        if self.next_purge is not None and now < self.next_purge:
            return 0
        started = time.perf_counter()
        conn = self.connection.get()
        days = self.fanout.host.inbox_retention_days(conn)
        counts = purge(conn, retention_days=days, now=now, schema=self.fanout.schema)
        work = 0
        for what, count in counts.items():
            self.purged[what] += count
            work += count
        self.next_purge = now + self.every
        log_round(self.recorder, self.name, work, started)
        return work
