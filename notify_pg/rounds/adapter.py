"""A round made of a function of the worker's connection (the ``rounds`` hook of `Worker`).

Before the loop (`notify_pg.rounds.loop`), a worker's extra rounds were plain callables
``round(conn) -> int`` run on the worker's connection (`notify_pg.inbox.fanout.InboxRound`,
`notify_pg.mail.drain.MailRound`, a host's own). `ConnectionRound` makes such a callable a
`notify_pg.rounds.loop.Round`: it runs it on the shared connection, passes the loop's stop
event when the callable takes a ``stop`` keyword, and logs ``<name> round`` when it did work.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from notify_pg.db.seam import Conn
from notify_pg.rounds.connection import RoundConnection
from notify_pg.rounds.loop import RoundRecorder, log_round, next_wake_of

__all__ = ["ConnectionRound", "takes_stop"]


def takes_stop(function: Callable[..., Any]) -> bool:
    """Whether ``function`` takes a ``stop`` keyword (a round that can stop between units)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return "stop" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


class ConnectionRound:
    """A callable of the worker's connection, run as a round of the loop.

    Args:
        function: ``function(conn) -> int`` (or ``function(conn, stop=event) -> int``): the
            work done; its ``name`` attribute names the round (default ``inbox``), its
            ``next_wake()``, if any, shortens the idle pause.
        connection: the worker's connection.
        recorder: receives ``round_done``.
    """

    def __init__(
        self,
        function: Callable[..., int],
        connection: RoundConnection,
        recorder: RoundRecorder,
    ) -> None:
        self.function = function
        self.connection = connection
        self.recorder = recorder
        # A round may name itself (``name``, e.g. the mail drain's "mail"); else "inbox".
        self.name = str(getattr(function, "name", "inbox"))
        self._stop = takes_stop(function)

    def run(self, stop: threading.Event) -> int:
        """Run the callable on the worker's connection; return the work it did."""
        started = time.perf_counter()
        conn: Conn = self.connection.get()
        done = self.function(conn, stop=stop) if self._stop else self.function(conn)
        log_round(self.recorder, self.name, done, started)
        return done

    def next_wake(self) -> datetime | None:
        """The callable's ``next_wake()``, if it has one."""
        return next_wake_of(self.function)
