"""The loop of notify_pg's workers and the connection its rounds share.

- `notify_pg.rounds.loop`: `Round` (one job of a worker) and `Loop` (runs rounds in turn,
  with one way of failing, pausing and stopping for all of them);
- `notify_pg.rounds.connection`: `RoundConnection`, the session every round of a worker runs
  on, bounded by the partition takeover and statement timeouts.

"Round" means one thing in notify_pg: a step of this loop (a `Round`). What a round does
inside has names of its own (a consumer's batch, a fan-out claim, a drain's pass).

It imports `notify_pg.db` only, so that every wing with rounds (push, inbox, mail) and the
worker wing that assembles them (`notify_pg.worker`) can use it.
"""

from notify_pg.rounds.connection import RoundConnection
from notify_pg.rounds.loop import Loop, Round, RoundRecorder, log_round, next_wake_of

__all__ = [
    "Loop",
    "Round",
    "RoundConnection",
    "RoundRecorder",
    "log_round",
    "next_wake_of",
]
