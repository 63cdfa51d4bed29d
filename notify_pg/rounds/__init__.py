"""The loop of notify_pg's workers and the connection its rounds share.

- `notify_pg.rounds.loop`: `Round` (one job of a worker) and `Loop` (runs rounds in turn,
  with one way of failing, pausing and stopping for all of them);
- `notify_pg.rounds.connection`: `RoundConnection`, the session every round of a worker runs
  on, bounded by the partition takeover and statement timeouts;
- `notify_pg.rounds.adapter`: `ConnectionRound`, a function of the worker's connection run
  as a round (the ``rounds`` hook of `notify_pg.push.worker.Worker`).

It imports `notify_pg.db` only, so that every wing with rounds (push, inbox, mail) and the
worker wing that assembles them (`notify_pg.worker`) can use it.
"""

from notify_pg.rounds.adapter import ConnectionRound, takes_stop
from notify_pg.rounds.connection import RoundConnection
from notify_pg.rounds.loop import Loop, Round, RoundRecorder, log_round, next_wake_of

__all__ = [
    "ConnectionRound",
    "Loop",
    "Round",
    "RoundConnection",
    "RoundRecorder",
    "log_round",
    "next_wake_of",
    "takes_stop",
]
