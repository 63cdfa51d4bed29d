"""The loop of a worker (`notify_pg.rounds.loop.Loop`, issue 24): every round gets the stop
event, a failure is logged and recorded the same way whichever round fails, the idle pause
honours the earliest ``next_wake``, and the stop ends the loop after the round in progress."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pgworld import SCHEMA

from notify_pg.db.errors import StorageError
from notify_pg.rounds.connection import RoundConnection
from notify_pg.rounds.loop import Loop

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


class Step:
    """A round that records the stop event it gets and does what it is told."""

    def __init__(
        self,
        name: str,
        work: int = 0,
        *,
        then: Callable[[threading.Event], None] | None = None,
        wake: datetime | None = None,
    ) -> None:
        self.name = name
        self.work = work
        self.then = then
        self.wake = wake
        self.stops: list[threading.Event] = []
        self.closed = False

    def run(self, stop: threading.Event) -> int:
        self.stops.append(stop)
        if self.then is not None:
            self.then(stop)
        return self.work

    def next_wake(self) -> datetime | None:
        return self.wake

    def close(self) -> None:
        self.closed = True


def test_every_round_gets_the_loops_stop_event() -> None:
    rounds = [Step("consumer"), Step("due"), Step("push"), Step("inbox"), Step("mail")]
    passes = []

    def count(stop: threading.Event) -> None:
        passes.append(1)
        if len(passes) == 3:
            stop.set()

    rounds.append(Step("mail", then=count))
    stop = threading.Event()
    loop = Loop(rounds, poll_interval=timedelta(milliseconds=1))
    loop.run(stop)
    assert len(passes) == 3
    for step in rounds:
        assert step.stops and all(s is stop for s in step.stops), step.name
        assert step.closed
    # run_once hands its own event through, too.
    other = threading.Event()
    loop.run_once(other)
    assert all(step.stops[-1] is other for step in rounds)


def test_the_stop_ends_the_loop_after_the_round_in_progress() -> None:
    finished: list[str] = []

    def long_round(stop: threading.Event) -> None:
        stop.set()  # a signal arrives while the round works
        time.sleep(0.05)
        finished.append("inbox")

    first, busy, after = Step("push", 1), Step("inbox", 5, then=long_round), Step("mail", 1)
    loop = Loop([first, busy, after], poll_interval=timedelta(seconds=30))
    started = time.monotonic()
    loop.run(threading.Event())
    assert time.monotonic() - started < 5  # no idle pause, no back-off after the stop
    assert finished == ["inbox"]  # the round in progress ran to its end
    assert len(first.stops) == 1 and len(busy.stops) == 1
    assert after.stops == []  # no round starts once the stop is set
    assert first.closed and busy.closed and after.closed


def test_the_idle_pause_honours_the_earliest_next_wake() -> None:
    rounds = [
        Step("consumer"),
        Step("inbox", wake=NOW + timedelta(seconds=5)),
        Step("mail", wake=NOW + timedelta(seconds=2)),
    ]
    loop = Loop(rounds, poll_interval=timedelta(seconds=60), clock=lambda: NOW)
    assert loop.pause() == 2.0
    rounds[2].wake = NOW - timedelta(seconds=1)  # overdue: no pause at all
    assert loop.pause() == 0.0
    rounds[1].wake = rounds[2].wake = None
    assert loop.pause() == 60.0


def test_an_idle_loop_wakes_for_a_round_and_not_later() -> None:
    """With a 60 s poll, a round that wakes 0.1 s later is run again after about 0.1 s."""
    runs: list[float] = []

    def seen(stop: threading.Event) -> None:
        runs.append(time.monotonic())
        if len(runs) == 3:
            stop.set()

    step = Step("mail", then=seen)
    step.wake = datetime.now(UTC) + timedelta(milliseconds=100)

    def rewake(stop: threading.Event) -> None:
        seen(stop)
        step.wake = datetime.now(UTC) + timedelta(milliseconds=100)

    step.then = rewake
    loop = Loop([step], poll_interval=timedelta(seconds=60))
    started = time.monotonic()
    loop.run(threading.Event())
    assert len(runs) == 3 and time.monotonic() - started < 10


@pytest.mark.parametrize("failing", ["consumer", "due", "push", "inbox", "mail"])
def test_a_failure_is_logged_and_recorded_alike_whichever_round_fails(
    db_dsn: str, failing: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="notify_pg.worker")
    error = StorageError(
        "storage_failure",
        "writes refused",
        sqlstate="25006",
        server_message="cannot execute INSERT in a read-only transaction",
    )

    def fail(stop: threading.Event) -> None:
        stop.set()  # one failed pass, then the loop ends
        raise error

    names = ["consumer", "due", "push", "inbox", "mail"]
    rounds = [Step(n, then=fail if n == failing else None) for n in names]
    counted: list[tuple[str, Exception]] = []
    connection = RoundConnection(lambda: psycopg.connect(db_dsn, autocommit=True), schema=SCHEMA)
    loop = Loop(
        rounds,
        connection=connection,
        name="push",
        schema=SCHEMA,
        on_failure=lambda name, exc: counted.append((name, exc)),
    )
    connection.get()
    loop.run(threading.Event())
    assert counted == [(failing, error)]
    after = names.index(failing) + 1
    assert all(not step.stops for step in rounds[after:])  # the pass ended at the failure
    failed = [r for r in caplog.records if r.msg == "round failed"]
    assert len(failed) == 1
    fields: dict[str, Any] = failed[0].fields  # type: ignore[attr-defined]
    assert fields == {
        "round": failing,
        "error_type": "StorageError",
        "failures": 1,
        "code": "storage_failure",
        "sqlstate": "25006",
        "pg_message": "cannot execute INSERT in a read-only transaction",
    }
    assert connection.conn is None  # dropped after the failure, closed at the end
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        row = conn.execute(
            f"SELECT name, round, code, sqlstate, message, failures FROM {SCHEMA}.consumer_failures"
        ).fetchall()
    assert row == [
        (
            "push",
            failing,
            "storage_failure",
            "25006",
            "cannot execute INSERT in a read-only transaction",
            1,
        )
    ]
