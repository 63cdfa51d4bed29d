"""The loop of a worker: rounds run in turn, with one way of failing, pausing and stopping.

A round is a small object with one job (`Round`: the consumer, due work, push sends, the
inbox's fan-out, the mail drain, the purge ...). `Loop` runs its rounds in order, one pass
after another, and does for all of them alike what each used to do its own way:

- **the stop signal**: no round starts once the stop event is set, and the event is passed
  into every round, so a long round can stop between its units of work (the loop ends after
  the round in progress);
- **failures**: a round that raises ends the pass; the failure is logged (``round failed``
  with the round's name, error type, code, SQLSTATE and PostgreSQL's message), counted for
  the metrics, recorded for ``notify db status`` when the database takes the record, the
  shared connection is dropped, and the next pass waits a back-off that doubles with each
  failure in a row (30 s at most);
- **idle pauses**: a pass that did no work waits the poll interval, or less when a round
  says it has work earlier (``next_wake``).

Logs carry round names, counts, codes and error types: never a person.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from notify_core.values.errors import NotifyError
from notify_pg.db.errors import StorageError
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Seam
from notify_pg.rounds.connection import RoundConnection

__all__ = ["Loop", "Round", "RoundRecorder", "log_round", "next_wake_of"]

_log = logging.getLogger("notify_pg.worker")

#: The longest back-off after failed passes (seconds).
MAX_BACKOFF = 30.0


@runtime_checkable
class Round(Protocol):
    """One job of a worker, run again and again by a `Loop`.

    Besides ``name`` and ``run``, a round may have (the loop looks them up, none is required):

    - ``next_wake() -> datetime | None``: when the round next has work (the idle pause ends
      then at the latest; ``None``: no opinion);
    - ``failure_fields() -> Mapping[str, object]``: fields added to every ``round failed``
      line (the push round's held results);
    - ``finish() -> None``: called once when the loop stops, before ``close`` (the push
      round's last try to write held results); a raise is logged as a failed round;
    - ``close() -> None``: release what the round holds (threads, connections).
    """

    #: The round's name in logs, metrics and ``notify db status`` (``consumer``, ``mail`` ...).
    name: str

    def run(self, stop: threading.Event) -> int:
        """Do one round of work; return how much was done (0: nothing to do).

        ``stop`` is the loop's stop event: a round that handles many units (people, events)
        checks it between them and returns early once it is set.
        """
        ...


class RoundRecorder(Protocol):
    """The metric edges of the loop (`notify_pg.push.recorder.Recorder` has them)."""

    def round_done(self, round_name: str, work: int, seconds: float) -> None:
        """A round did ``work`` in ``seconds``."""
        ...

    def round_failed(self, round_name: str) -> None:
        """A round failed."""
        ...


class _NoRecorder:
    def round_done(self, round_name: str, work: int, seconds: float) -> None:
        pass

    def round_failed(self, round_name: str) -> None:
        pass


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def log_round(recorder: RoundRecorder, name: str, done: int, started: float) -> None:
    """Count and log a round that did work: ``<name> round`` with its duration and work.

    Args:
        recorder: receives ``round_done``.
        name: the round's name.
        done: the work done (nothing is logged for 0).
        started: `time.perf_counter` at the round's start.
    """
    if not done:
        return
    duration_ms = _elapsed_ms(started)
    recorder.round_done(name, done, duration_ms / 1000)
    fields = {"round": name, "duration_ms": duration_ms, "work": done}
    _log.info(f"{name} round", extra={"fields": fields})


def next_wake_of(round_: object) -> datetime | None:
    """The round's ``next_wake()``, or ``None`` when it has none."""
    wake = getattr(round_, "next_wake", None)
    found = wake() if callable(wake) else None
    return found if isinstance(found, datetime) else None


class Loop:
    """Runs rounds in turn until stopped; failures, pauses and the stop alike for all.

    Args:
        rounds: the rounds, run in this order in every pass.
        connection: the connection the rounds share: dropped after a failure, used to
            record failures for ``notify db status``, closed at the end (``None``: failures
            are logged only).
        name: the name failures are recorded under (the consumer's, e.g. ``push``).
        schema: the library's schema (the failure record).
        poll_interval: the pause after a pass that did no work; also the unit of the
            back-off after failures (doubled per failure in a row, 30 s at most).
        clock: the current instant, to turn ``next_wake`` into a pause.
        recorder: receives ``round_failed`` (metrics).
        on_failure: called with the round's name and the error after each failure (a
            worker's failure count).

    Example:
        >>> loop = Loop([ConsumeRound(...), DueRound(...)], connection=conn)  # doctest: +SKIP
        >>> loop.run(stop=threading.Event())  # doctest: +SKIP
    """

    def __init__(
        self,
        rounds: Sequence[Round],
        *,
        connection: RoundConnection | None = None,
        name: str = "push",
        schema: str = DEFAULT_SCHEMA,
        poll_interval: timedelta = timedelta(seconds=1),
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        recorder: RoundRecorder | None = None,
        on_failure: Callable[[str, Exception], None] | None = None,
    ) -> None:
        self.rounds: tuple[Round, ...] = tuple(rounds)
        self.connection = connection
        self.name = name
        self.poll_interval = poll_interval
        self.clock = clock
        self.recorder: RoundRecorder = recorder or _NoRecorder()
        self.on_failure = on_failure
        #: The round in progress, or the last one run (the name a failure is logged under).
        self.current = self.rounds[0].name if self.rounds else "loop"
        #: Failed passes in a row (0 after a good pass).
        self.failures = 0
        self._seam = Seam("notify_pg", schema)
        self._unrecorded: dict[str, Any] | None = None

    def run_once(self, stop: threading.Event | None = None) -> int:
        """Run every round once, in order; return the work done (0: idle).

        No round starts once ``stop`` is set: the call returns after the round in progress.

        Raises:
            Exception: the failure of a round (`current` names it); the rounds after it do
                not run in this pass.
        """
        stop = stop if stop is not None else threading.Event()
        work = 0
        for round_ in self.rounds:
            if stop.is_set():
                return work
            self.current = round_.name
            work += round_.run(stop)
        return work

    def run(self, stop: threading.Event) -> None:
        """Run passes until ``stop`` is set; then finish the round in progress and return.

        A failed pass is logged, recorded and tried again after a back-off; a pass without
        work is followed by the idle pause (`pause`). At the stop every round's ``finish``
        runs (failures logged alike), then everything is closed (`close`).
        """
        pause = self.poll_interval.total_seconds()
        self.failures = 0
        while not stop.is_set():
            try:
                work = self.run_once(stop)
            except Exception as exc:  # a failed round is retried; the loop must go on
                self.failures += 1
                self.failed(exc)
                stop.wait(min(MAX_BACKOFF, pause * 2**self.failures))
                continue
            self.failures = 0
            self.record_failure()
            if work == 0:
                stop.wait(self.pause())
        for round_ in self.rounds:
            finish = getattr(round_, "finish", None)
            if callable(finish):
                self.current = round_.name
                try:
                    finish()
                except Exception as exc:  # the loop ends: logged and recorded, not raised
                    self.failed(exc, self.failures + 1)
        self.close()

    def pause(self) -> float:
        """The idle pause in seconds: the poll interval, shorter when a round wakes earlier
        (``next_wake``, e.g. the mail drain at the next email's due time)."""
        pause = self.poll_interval.total_seconds()
        now = self.clock()
        for round_ in self.rounds:
            wake = next_wake_of(round_)
            if wake is not None:
                pause = min(pause, max(0.0, (wake - now).total_seconds()))
        return pause

    def failed(self, exc: Exception, failures: int | None = None) -> None:
        """Log a failed round with its cause, count it and record it for ``notify db status``.

        Args:
            exc: the round's error.
            failures: failures in a row, for the log (default: `failures`).
        """
        name = self.current
        if self.on_failure is not None:
            self.on_failure(name, exc)
        self.recorder.round_failed(name)
        fields: dict[str, Any] = {
            "round": name,
            "error_type": type(exc).__name__,
            "failures": self.failures if failures is None else failures,
        }
        code, sqlstate, message = "error", None, type(exc).__name__
        if isinstance(exc, NotifyError):
            code, message = exc.code, exc.message
            fields["code"] = code
        if isinstance(exc, StorageError):
            sqlstate = exc.sqlstate
            if exc.code == "storage_unavailable":
                # The driver's text names the server's address: the code says enough.
                message = "cannot reach PostgreSQL"
            if exc.sqlstate:
                fields["sqlstate"] = exc.sqlstate
            if exc.server_message:
                fields["pg_message"] = exc.server_message
                message = exc.server_message
            if sqlstate == "25P03":  # idle in a transaction past partition_takeover
                fields["taken_over"] = True
                message += ": its partition was taken over (its claims too)"
        for round_ in self.rounds:
            more = getattr(round_, "failure_fields", None)
            if callable(more):
                extra: Mapping[str, Any] = more()
                fields.update(extra)
        _log.error("round failed", extra={"fields": fields})
        if self.connection is not None:
            self.connection.drop()
        self._unrecorded = {
            "name": self.name,
            "failed_at": datetime.now(UTC),
            "round": name,
            "code": code,
            "sqlstate": sqlstate,
            "message": message,
        }
        self.record_failure()

    def record_failure(self) -> None:
        """Write the last failure for ``notify db status`` (once the database takes it)."""
        if self._unrecorded is None or self.connection is None:
            return
        try:
            with self.connection.transaction() as conn:
                # A database made read-only by its default still takes this one row.
                self._seam.run(conn, "read_write")
                self._seam.run(conn, "record_consumer_failure", self._unrecorded)
            self._unrecorded = None
        except Exception as again:  # unreachable: written after the next good round
            self.connection.drop()
            _log.debug(
                "failure not recorded yet",
                extra={"fields": {"error_type": type(again).__name__}},
            )

    def close(self) -> None:
        """Close every round (``close``, when it has one) and the shared connection."""
        for round_ in self.rounds:
            close = getattr(round_, "close", None)
            if callable(close):
                close()
        if self.connection is not None:
            self.connection.close()
