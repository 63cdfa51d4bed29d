"""The mail drain as a round of a worker's loop (`MailDrainRound`).

It runs `notify_pg.mail.drain.MailRound` (drain what is due, then sleep until the next email
falls due, backing off while the SMTP server is unreachable) on the worker's connection,
passes the loop's stop event on (the drain stops between people), and tells the loop when
it next has work (``next_wake``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import datetime

from notify_pg.mail.drain import MailRound
from notify_pg.rounds.connection import RoundConnection
from notify_pg.rounds.loop import RoundRecorder, log_round

__all__ = ["MailDrainRound"]


class MailDrainRound:
    """The mail drain of this worker, as a round of the loop.

    Args:
        mail: the drain's round (`MailRound`: its poll, back-off and wake-up).
        connection: the worker's connection.
        recorder: receives ``round_done`` (metrics).
    """

    #: The round's name in logs, metrics and ``notify db status``.
    name = "mail"

    def __init__(
        self, mail: MailRound, connection: RoundConnection, recorder: RoundRecorder
    ) -> None:
        self.mail = mail
        self.connection = connection
        self.recorder = recorder

    def run(self, stop: threading.Event) -> int:
        """Drain if something is due now; return the rows claimed."""
        started = time.perf_counter()
        conn = self.connection.get()
        # The drain stops between people.
        done = self.mail(conn, stop=stop)
        log_round(self.recorder, self.name, done, started)
        return done

    def next_wake(self) -> datetime | None:
        """When the drain next has work (``None``: at once)."""
        return self.mail.next_wake()

    def notice(self, due: Sequence[datetime | None]) -> None:
        """Take note of emails that fall due (entries this process's fan-out just wrote)."""
        self.mail.notice(due)
