"""The consumer round: the next events of the log through the pipeline, batch after batch.

`ConsumeRound.consume` (one batch) locks the cursor of one partition of the consumer
(``FOR UPDATE SKIP LOCKED``, the most lagging one no other worker holds: one batch per
partition at a time, whatever the number of workers) and the cursors of the other free
partitions at the same position, up to the worker's share of the partitions (all of them for
a lone worker: one batch decides for everybody), reads the next events after it in ``seq``
order (a batch of k of P partitions up to P/k pages: about the work of a batch for
everybody), runs each through `notify_core.hints.pipeline.Pipeline.handle` deciding for the
partition's recipients only (due work of those recipients at or before the event first),
carries out the hints (push sends, the host's sink), moves the cursor and commits. A crash
anywhere in the batch rolls all of it back: no hint is doubled or lost. With N partitions, N
consumers (on up to N workers) run side by side and together give exactly the hints of one
consumer (`notify_core.replay.partitions`). `ConsumeRound.run` runs batches up to the head of
the log; `ConsumeRound.prepare` creates or re-partitions the cursors.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from notify_core.events.log import Event, EventError, parse_event
from notify_core.hints.pipeline import Hint
from notify_core.replay.partitions import Partition, Partitions
from notify_core.values.instants import format_instant
from notify_pg.db.errors import PartitionError
from notify_pg.db.seam import Conn
from notify_pg.push.context import PushContext, StagedPush
from notify_pg.push.session import Session

__all__ = ["ConsumeRound"]

_log = logging.getLogger("notify_pg.worker")


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


class ConsumeRound:
    """The consumer round of one worker: batches (`consume`) up to the head of the log, or
    ``max_batches`` of them.

    Args:
        push: what the push rounds of the worker share.
        max_batches: batches (one transaction each) per `run` at most (the worker's other
            rounds go on).
    """

    #: The round's name in logs, metrics and ``notify db status``.
    name = "consumer"

    def __init__(self, push: PushContext, *, max_batches: int = 100) -> None:
        self.push = push
        self.max_batches = max_batches
        #: Whether the cursors were checked on the current connection (`prepare`).
        self.cursor_ready = False
        push.connection.on_open.append(self._forget_cursors)

    def _forget_cursors(self) -> None:
        self.cursor_ready = False

    def run(self, stop: threading.Event) -> int:
        """Consume until the partitions this worker can take are at the head, at most
        ``max_batches`` batches, none once ``stop`` is set; return the events handled."""
        work = 0
        for _ in range(self.max_batches):
            if stop.is_set():
                break
            handled = self.consume()
            work += handled
            if handled == 0:
                break
        return work

    # --- cursors -----------------------------------------------------------------------------

    def prepare(self) -> None:
        """Create the consumer's cursors for ``config.partitions``, or re-partition them
        (`notify_pg.push.worker.Worker.prepare` says how).

        Raises:
            PartitionError: ``partition_change_refused``, the cursors stand at different
                positions (the message names them); nothing is changed.
            StorageError: PostgreSQL failed.
        """
        push = self.push
        name, parts = push.config.consumer, push.config.partitions
        with push.connection.transaction() as conn:
            if parts > 1:
                # This session counts among the consumer's workers until it ends: the workers
                # share the partitions (`_more_partitions`).
                push.seam.one(conn, "join_consumer", {"schema": push.schema, "name": name})
            rows = push.seam.all(conn, "consumer_partitions", {"name": name})
            if not self._fits(rows, parts):
                # Creation and change are serialized per consumer, so two workers starting at
                # once with different counts never mix their cursors.
                push.seam.one(conn, "lock_consumer", {"schema": push.schema, "name": name})
                rows = push.seam.all(conn, "lock_consumer_partitions", {"name": name})
                if not self._fits(rows, parts):
                    self._repartition(conn, rows)
        self.cursor_ready = True

    @staticmethod
    def _fits(rows: Sequence[tuple[Any, ...]], parts: int) -> bool:
        return [(int(r[0]), int(r[1])) for r in rows] == [(p, parts) for p in range(parts)]

    def _repartition(self, conn: Conn, rows: Sequence[tuple[Any, ...]]) -> None:
        push = self.push
        name, parts = push.config.consumer, push.config.partitions
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
            push.seam.run(conn, "delete_cursors", {"name": name})
        push.seam.run(conn, "insert_cursors", {"name": name, "parts": parts, "position": position})
        if rows:
            changed = {"from": int(rows[0][1]), "to": parts, "position": position}
            _log.info("consumer partitions changed", extra={"fields": changed})

    # --- one batch ---------------------------------------------------------------------------

    def consume(self) -> int:
        """Consume one batch of events (one transaction); return the number of events handled
        (`notify_pg.push.worker.Worker.consume` says which partitions it takes).

        Raises:
            PartitionError: ``partition_change_refused`` or ``partition_count_changed``.
            StorageError: PostgreSQL failed; the batch is rolled back.
        """
        push = self.push
        name, parts = push.config.consumer, push.config.partitions
        if not self.cursor_ready:
            self.prepare()
        started = time.perf_counter()
        handled = 0
        hints: list[Hint] = []
        with push.connection.transaction() as conn:
            row = push.seam.one(conn, "lock_cursor", {"name": name, "parts": parts})
            if row is None:
                self._check_partitions(conn)
                return 0
            part, position = int(row[0]), int(row[1])
            rows = push.seam.all(
                conn, "read_events_page", {"after": position, "limit": push.config.batch_size}
            )
            if not rows:
                return 0
            # Only a batch with events takes the other free partitions (a poll at the head
            # would count the workers and lock cursors for nothing).
            taken = [part, *self._more_partitions(conn, part, position)]
            batch = push.config.batch_size
            if len(taken) < parts and len(rows) == batch:
                # A batch that decides for k of the P partitions reads P/k pages: it does
                # about the work of a batch for everybody, so its reads per batch (the cursor,
                # the page, each thread's facts) are paid as often as by one worker's batches.
                rows += push.seam.all(
                    conn,
                    "read_events_page",
                    {"after": int(rows[-1][0]), "limit": batch * parts // len(taken) - batch},
                )
            # The host's facts are read once per batch (`Session.at`).
            session = Session(conn, keep_host_facts=True)
            # All partitions own everybody: no filter at all, the plain pipeline.
            owns: Partition | Partitions | None = None
            if len(taken) == 1 and parts > 1:
                owns = Partition(part, parts)
            elif len(taken) < parts:
                owns = Partitions(tuple(taken), parts)
            pipeline, schedule = push.pipeline(session, wait=True, owns=owns)
            # The batch's writes of windows and push sends are made once at its end (one
            # statement each for all its events): nothing in the batch reads them from the
            # tables before (`PgSchedule` writes its pending windows before it reads any).
            pushes: list[StagedPush] = []
            for row in rows:
                event = self._event(row)
                if event is not None:
                    session.at(event.seq, event.occurred_at)
                    out = pipeline.handle(event)
                    push.carry_out(session, pipeline, out, defer=pushes)
                    hints.extend(out)
                if push.on_event is not None:
                    push.on_event(conn, event)
                position = int(row[0])
                handled += 1
            schedule.write_pending()
            push.insert_pushes(session, pushes)
            push.write_records(session)
            push.seam.run(
                conn,
                "move_cursors",
                {"name": name, "part_set": taken, "position": position},
            )
            # Events of the batch (following) go last: the log's append lock is held from the
            # first append to the commit, and host writes and the other partitions' batches
            # that append wait for it.
            push.events.append_many(conn, session.appends)
        push.count(hints)
        push.stats.events += handled
        push.stats.partition_events += handled * len(taken)
        duration_ms = _elapsed_ms(started)
        push.recorder.round_done("consumer", handled, duration_ms / 1000)
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
        """The other partitions this batch takes: free ones at the same position, up to this
        worker's share of the partitions (their count over the consumer's workers now), so a
        lone worker handles all of them in one batch and several workers still share them.
        A worker whose session has been idle for longer than ``partition_takeover`` (paused,
        or busy in a long mail round) does not count until its next statement."""
        push = self.push
        parts = push.config.partitions
        if parts == 1:
            return []
        params = {
            "schema": push.schema,
            "name": push.config.consumer,
            "recent": push.config.partition_takeover,
        }
        row = push.seam.one(conn, "consumer_workers", params)
        workers = max(1, int(row[0]) if row is not None else 1)
        share = -(-parts // workers)
        if share <= 1:
            return []
        rows = push.seam.all(
            conn,
            "lock_cursors_at",
            {
                "name": push.config.consumer,
                "parts": parts,
                "position": position,
                "part": part,
                "limit": share - 1,
            },
        )
        return [int(r[0]) for r in rows]

    def _check_partitions(self, conn: Conn) -> None:
        """No free cursor of this count: every partition is busy, or the count changed."""
        config = self.push.config
        rows = self.push.seam.all(conn, "consumer_partitions", {"name": config.consumer})
        if not rows:
            self.cursor_ready = False  # removed behind our back: created again next batch
        elif not self._fits(rows, config.partitions):
            raise PartitionError(
                "partition_count_changed",
                f"consumer {config.consumer!r} now has {int(rows[0][1])} partitions, "
                f"this worker runs {config.partitions}: restart it with that count",
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
            self.push.stats.bad_events += 1
            _log.warning(
                "bad event skipped",
                extra={"fields": {"seq": seq, "code": error.code, "pointer": error.pointer}},
            )
            return None
