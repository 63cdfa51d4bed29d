"""The mail drain's round of a worker's loop (`MailRound`).

The round runs passes of the drain (`notify_pg.mail.drain.MailDrain.drain_once`) while mails
are due, on the worker's connection, and knows when to run again: at the next due
``email_after`` (or a lease's end), at the latest after ``poll`` (the safety net for entries
other processes write), never by querying every second; after a pass stopped by an
unreachable server, not before a back-off (doubling from ``backoff`` up to ``poll``). It
passes the loop's stop event on (the drain stops between mails) and tells the loop when it
next has work (``next_wake``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta

from notify_pg.db.seam import Conn
from notify_pg.mail.drain import MailDrain
from notify_pg.rounds.connection import RoundConnection
from notify_pg.rounds.loop import RoundRecorder, log_round

__all__ = ["MailRound"]


class MailRound:
    """The mail drain of this worker, as a round of the loop: drain what is due, then sleep
    until the next email falls due (at the latest ``poll`` later).

    Args:
        drain: the drain of this worker.
        connection: the worker's connection.
        recorder: receives ``round_done`` (metrics).
        poll: the longest pause between two looks at the queue (entries written by other
            processes fall due without this worker hearing of them).
        max_passes: drain passes per run at most (the worker's other rounds go on).
        backoff: the pause after a pass the SMTP server was unreachable, doubled after each
            such pass in a row, ``poll`` at most.
    """

    #: The round's name in logs, metrics and ``notify db status``.
    name = "mail"

    def __init__(
        self,
        drain: MailDrain,
        connection: RoundConnection,
        recorder: RoundRecorder,
        *,
        poll: timedelta = timedelta(minutes=1),
        max_passes: int = 20,
        backoff: timedelta = timedelta(seconds=5),
    ) -> None:
        self.drain = drain
        self.connection = connection
        self.recorder = recorder
        self.poll = poll
        self.max_passes = max_passes
        self.backoff = backoff
        self._wake: datetime | None = None
        self._unreachable = 0  # passes in a row the SMTP server was unreachable

    def next_wake(self) -> datetime | None:
        """When the drain next has work (``None``: at once)."""
        return self._wake

    def notice(self, due: Sequence[datetime | None]) -> None:
        """Take note of emails that fall due (entries this process's fan-out just wrote)."""
        for at in due:
            if at is not None and (self._wake is None or at < self._wake):
                self._wake = at

    def run(self, stop: threading.Event) -> int:
        """Drain if something is due now (or writes are held); return the rows claimed.

        No pass starts once ``stop`` is set, and a pass in progress stops before its next
        mail (`MailDrain.drain_once`).
        """
        drain = self.drain
        if self._wake is not None and drain.clock() < self._wake and not drain.held:
            return 0
        started = time.perf_counter()
        conn = self.connection.get()
        work = 0
        more = False
        for _ in range(self.max_passes):
            if stop.is_set():
                more = True
                break
            done = drain.drain_once(conn, stop=stop)
            work += done
            if drain.stopped:
                more = True
                break
            if done == 0 or drain.unreachable:
                break
        else:
            more = True
        self._wake = self._next_wake(conn, more)
        log_round(self.recorder, self.name, work, started)
        return work

    def _next_wake(self, conn: Conn, more: bool) -> datetime:
        now = self.drain.clock()
        if self.drain.unreachable:
            self._unreachable += 1
            pause: timedelta = self.backoff * 2 ** min(self._unreachable - 1, 30)
            return now + min(pause, self.poll)
        self._unreachable = 0
        if more:
            return now
        wake = now + self.poll
        due = self.drain.next_due(conn)
        return due if due is not None and due < wake else wake
