"""The due-work round: windows, delayed releases and badge syncs that have come due.

`DueRound.run_due` runs `notify_core.hints.pipeline.Pipeline.advance` up to now, claiming windows,
delayed releases and badge syncs with ``FOR UPDATE SKIP LOCKED`` (several workers drain
them), never past the first event some partition of the consumer has not handled yet (so due
work never runs ahead of an earlier event, as in a replay), at most ``due_batch`` items per
transaction.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

from notify_core.hints.pipeline import Hint
from notify_pg.push.context import PushContext
from notify_pg.push.session import Session

__all__ = ["DueRound"]

_log = logging.getLogger("notify_pg.worker")


class DueRound:
    """Due-work rounds of one worker.

    Args:
        push: what the push rounds of the worker share.
    """

    #: The round's name in logs, metrics and ``notify db status``.
    name = "due"

    def __init__(self, push: PushContext) -> None:
        self.push = push

    def run(self, stop: threading.Event) -> int:
        """Run one due-work round up to now; return the work done (one transaction: ``stop``
        is not looked at inside it)."""
        return self.run_due()

    def run_due(self, until: datetime | None = None) -> int:
        """Run one due-work round up to ``until`` (default: now); return the work done.

        Never past the first event that some partition of the consumer has not handled yet:
        the round runs the due work of every partition, and each must wait for its consumer.

        Raises:
            StorageError: PostgreSQL failed; the round is rolled back.
        """
        push = self.push
        limit = until if until is not None else push.clock()
        started = time.perf_counter()
        hints: list[Hint] = []
        with push.connection.transaction() as conn:
            row = push.seam.one(conn, "first_unconsumed_at", {"name": push.config.consumer})
            if row is not None:
                limit = min(limit, row[0].astimezone(UTC))
            session = Session(conn)
            pipeline, schedule = push.pipeline(session, budget=push.config.due_batch)
            hints = pipeline.advance(limit)
            schedule.write_pending()
            push.carry_out(session, pipeline, hints)
            push.write_records(session)
            push.events.append_many(conn, session.appends)
            done = schedule.popped
        push.stats.due += done
        push.count(hints)
        if done:
            duration_ms = round((time.perf_counter() - started) * 1000, 1)
            push.recorder.round_done("due", done, duration_ms / 1000)
            fields = {"round": "due", "duration_ms": duration_ms, "due": done, "hints": len(hints)}
            _log.info("due round", extra={"fields": fields})
        return done
