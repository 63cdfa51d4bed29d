"""Concurrent preference-record writes on separate connections (seed 002 Invariant 3 and 4,
Operation 15): the principal's advisory lock serializes them, the partial unique index backs it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from pgworld import SCHEMA

from notify_core.records import Ok, PreferenceRecord, Refusal, Refused, Status
from notify_pg.stores.records import PreferenceRecordRepository

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
    # The hosts' readings raced the lock: the stamps still follow recording order.
    assert_stamps_never_go_back(history)
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


def wait_for_a_lock_waiter(watcher: Conn) -> None:
    """Return once another backend of the test database waits for a lock (10 s at most)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        row = watcher.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        ).fetchone()
        if row and row[0]:
            return
        time.sleep(0.005)
    raise AssertionError("the second write did not wait for the principal's lock")


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
        wait_for_a_lock_waiter(watcher)
    worker.join(timeout=30)
    assert out["b"] == Ok(preference_id="pb")
    history = repo.history(watcher, "u")
    assert [(r.preference_id, r.status) for r in history] == [
        ("pa", Status.DELETED),
        ("pb", Status.ACTIVE),
    ]


def stamps(record: PreferenceRecord) -> list[datetime]:
    """The record's instants in the order they were stamped."""
    return [t for t in (record.set_at, record.suspended_at, record.deleted_at) if t is not None]


def assert_stamps_never_go_back(history: Sequence[PreferenceRecord]) -> None:
    """Temporal property 1-3 per record, and Concurrency 2 across the principal's records:
    every stamp of a write is at or after every stamp of the writes recorded before it."""
    for record in history:
        assert stamps(record) == sorted(stamps(record)), record
    for before, after in itertools.pairwise(history):
        # Once a successor is recorded, nothing stamps its predecessor any more.
        assert max(stamps(before)) <= after.set_at, (before, after)


def test_a_set_whose_host_read_now_before_the_lock_never_stamps_backwards(
    connect: Connect,
) -> None:
    """Issue 10 point 6, the reproduction (Temporal property 5, Concurrency 2).

    Host B reads its clock (T0 + 1 min) and then waits for the principal's lock, which a set
    of host A holds with the later reading T0 + 2 min. Before the fix, B superseded A with
    ``deleted_at`` = T0 + 1 min, before A's own ``set_at``, and the audit's ``in_effect_at``
    named B at T0 + 90 s, when B did not exist yet. Stamps are now taken under the lock and
    never go back: B is stamped at A's instant, and P governed until then.
    """
    repo = PreferenceRecordRepository(SCHEMA)
    a, b, watcher = connect(), connect(), connect()
    seam = dict(declared_channels=CHANNELS, format="plain")
    assert repo.set(a, "u", now=T0, preference_id="p", **seam) == Ok(preference_id="p")
    b_now = T0 + timedelta(minutes=1)  # B's host read the clock before the lock
    a_now = T0 + timedelta(minutes=2)
    out: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: out.setdefault("b", repo.set(b, "u", now=b_now, preference_id="pb", **seam))
    )
    with a.transaction():
        assert repo.set(a, "u", now=a_now, preference_id="pa", **seam) == Ok(preference_id="pa")
        worker.start()
        wait_for_a_lock_waiter(watcher)
    worker.join(timeout=30)
    assert out["b"] == Ok(preference_id="pb")
    history = repo.history(watcher, "u")
    assert [(r.preference_id, r.status) for r in history] == [
        ("p", Status.DELETED),
        ("pa", Status.DELETED),
        ("pb", Status.ACTIVE),
    ]
    assert_stamps_never_go_back(history)
    assert history[1].set_at == history[1].deleted_at == history[2].set_at == a_now
    in_between = T0 + timedelta(seconds=90)
    governing = repo.in_effect_at(watcher, "u", in_between)
    assert governing is not None and governing.preference_id == "p"
    last = repo.in_effect_at(watcher, "u", a_now)
    assert last is not None and last.preference_id == "pb"


def test_suspend_and_delete_with_an_earlier_now_never_stamp_backwards(connect: Connect) -> None:
    """A suspend and a delete whose host clock lies before the record's stamps are stamped at
    the principal's latest stamp (never before it), and their outcomes are unchanged."""
    repo = PreferenceRecordRepository(SCHEMA)
    conn = connect()
    seam = dict(declared_channels=CHANNELS, format="plain")
    assert repo.set(conn, "u", now=T0 + timedelta(hours=2), preference_id="p", **seam).ok
    assert repo.suspend(conn, "p", now=T0 + timedelta(hours=1)) == Ok(preference_id="p")
    assert repo.delete(conn, "p", now=T0) == Ok(preference_id="p")
    assert repo.set(conn, "u", now=T0, preference_id="q", **seam).ok
    assert repo.suspend(conn, "q", now=T0 + timedelta(hours=3)) == Ok(preference_id="q")
    history = repo.history(conn, "u")
    assert_stamps_never_go_back(history)
    assert stamps(history[0]) == [T0 + timedelta(hours=2)] * 3
    assert stamps(history[1]) == [T0 + timedelta(hours=2), T0 + timedelta(hours=3)]
