"""Concurrent preference-record writes on separate connections (seed 002 Invariant 3 and 4,
Operation 15): the principal's advisory lock serializes them, the partial unique index backs it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from pgworld import SCHEMA

from notify_core.records import Ok, Refusal, Refused, Status
from notify_pg.records import PreferenceRecordRepository

Conn = psycopg.Connection[Any]
Connect = Callable[[], Conn]
CHANNELS = ["email", "sms", "push", "in-app"]
T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)


def run_all(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run jobs in threads released together; return results or raised exceptions, in order."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def wrap(i: int, job: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            results[i] = job()
        except Exception as exc:  # the test inspects it
            results[i] = exc

    workers = [threading.Thread(target=wrap, args=(i, job)) for i, job in enumerate(jobs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
    return results


def test_twenty_parallel_sets_leave_one_in_effect(connect: Connect) -> None:
    """20 sets for one principal at once: 20 records, exactly one in effect, every other
    superseded (deleted with its deletion instant), none lost."""
    repo = PreferenceRecordRepository(SCHEMA)
    conns = [connect() for _ in range(20)]

    def job(i: int) -> Callable[[], Any]:
        return lambda: repo.set(
            conns[i],
            "user_u",
            now=T0 + timedelta(seconds=i),
            preference_id=f"pref_{i:02d}",
            declared_channels=CHANNELS,
            channel_preferences={"email": f"v{i}"},
        )

    results = run_all([job(i) for i in range(20)])
    assert results == [Ok(preference_id=f"pref_{i:02d}") for i in range(20)]
    conn = connect()
    history = repo.history(conn, "user_u")
    assert len(history) == 20
    in_effect = [r for r in history if r.in_effect]
    assert len(in_effect) == 1
    # Recording order is lock order: the last record recorded is the one in effect.
    assert in_effect[0] == history[-1] and history[-1].status is Status.ACTIVE
    assert all(r.status is Status.DELETED and r.deleted_at is not None for r in history[:-1])
    current = repo.current_for(conn, "user_u")
    assert current == history[-1]


def test_parallel_suspends_and_deletes_of_one_record(connect: Connect) -> None:
    """Ten suspends and ten deletes of one record at once: every answer is one the core could
    give in some order; the record ends deleted exactly once."""
    repo = PreferenceRecordRepository(SCHEMA)
    conn = connect()
    repo.set(conn, "u", now=T0, preference_id="p", declared_channels=CHANNELS, format="plain")
    conns = [connect() for _ in range(20)]
    jobs: list[Callable[[], Any]] = []
    for i, c in enumerate(conns):
        write = repo.suspend if i % 2 == 0 else repo.delete
        jobs.append(lambda w=write, c=c, i=i: w(c, "p", now=T0 + timedelta(minutes=i + 1)))
    results = run_all(jobs)
    suspends, deletes = results[0::2], results[1::2]
    assert deletes.count(Ok(preference_id="p")) == 1
    assert deletes.count(Refused(refusal=Refusal.ALREADY_DELETED)) == 9
    assert suspends.count(Ok(preference_id="p")) <= 1
    assert all(r in (Ok(preference_id="p"), Refused(refusal=Refusal.NOT_ACTIVE)) for r in suspends)
    record = repo.read(conn, "p")
    assert record is not None and record.status is Status.DELETED
    assert (record.suspended_at is not None) == (Ok(preference_id="p") in suspends)


def test_a_set_waits_for_an_open_supersession_and_supersedes_it(connect: Connect) -> None:
    """Operation 15: a set in an open transaction holds the principal; a second set waits,
    then sees the first committed and supersedes it (never two in effect)."""
    repo = PreferenceRecordRepository(SCHEMA)
    a, b, watcher = connect(), connect(), connect()
    seam = dict(declared_channels=CHANNELS, format="plain")
    out: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: out.setdefault("b", repo.set(b, "u", now=T0, preference_id="pb", **seam))
    )
    with a.transaction():
        assert repo.set(a, "u", now=T0, preference_id="pa", **seam) == Ok(preference_id="pa")
        worker.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            row = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            ).fetchone()
            if row and row[0]:
                break
            time.sleep(0.005)
        else:
            raise AssertionError("the second set did not wait for the principal's lock")
    worker.join(timeout=30)
    assert out["b"] == Ok(preference_id="pb")
    history = repo.history(watcher, "u")
    assert [(r.preference_id, r.status) for r in history] == [
        ("pa", Status.DELETED),
        ("pb", Status.ACTIVE),
    ]
