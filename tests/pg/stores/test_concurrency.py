"""Concurrent writers on separate connections (seed 000 notes 4, 7c and 9a; its tests
TestNotificationPreference_Concurrent, TestQuietHours_ConcurrentCreates, TestArchive_RaceWithPut).

Some tests force the interleaving: one transaction holds its write open until the other
connection is seen waiting for a lock in pg_stat_activity; others start threads at a barrier.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import psycopg
import pytest
from pgworld import ALEX, OWNER, SAM, SCHEMA, SUPPORT, T, channel, events, last_seq, thread

from notify_core.hints.levels import Preference
from notify_core.hints.quiet import QuietRule
from notify_pg import Conflict, NotifyStore, PutResult
from notify_reference_host import ReferenceHost

pytestmark = pytest.mark.usefixtures("world")

Conn = psycopg.Connection[Any]
Connect = Callable[[], Conn]


def run_all(*jobs: Callable[[], Any]) -> list[Any]:
    """Run jobs in threads started together; return results or raised exceptions, in order."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def wrap(i: int, job: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            results[i] = job()
        except Exception as exc:  # the caller inspects it
            results[i] = exc

    workers = [threading.Thread(target=wrap, args=(i, job)) for i, job in enumerate(jobs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
    return results


def wait_for_lock_waiter(conn: Conn, timeout: float = 10.0) -> None:
    """Block until another backend of this database waits for a lock."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        ).fetchone()
        if row and row[0]:
            return
        time.sleep(0.005)
    raise AssertionError("no backend started waiting for a lock")


def pref_rows(conn: Conn) -> list[tuple[Any, ...]]:
    return conn.execute(
        f"SELECT user_id, target_kind, target_id, level, version "
        f"FROM {SCHEMA}.notification_preferences ORDER BY 1, 2, 3"
    ).fetchall()


def overlapped(
    connect: Connect, first: Callable[[Conn], Any], second: Callable[[Conn], Any]
) -> tuple[Any, Any]:
    """Run ``first`` in an open transaction, start ``second`` on another connection, wait until
    it blocks on a lock, then commit ``first``."""
    a, b, watcher = connect(), connect(), connect()
    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.setdefault("second", second(b)))
    with a.transaction():
        out["first"] = first(a)
        worker.start()
        wait_for_lock_waiter(watcher)
    worker.join(timeout=30)
    return out["first"], out["second"]


def test_identical_first_puts_give_one_row_and_one_event(
    connect: Connect, conn: Conn, store: NotifyStore
) -> None:
    """Seed 000 TestNotificationPreference_Concurrent, first half (note 4e)."""

    def put(c: Conn) -> PutResult:
        return store.preferences.put(c, ALEX, thread(T), Preference(level="mentions"))

    first, second = overlapped(connect, put, put)
    assert (first.changed, second.changed) == (True, False)
    assert second.preference == first.preference
    assert pref_rows(conn) == [(ALEX, "thread", T, "mentions", 1)]
    assert len(events(conn)) == 1
    # And free-running, in rounds on other targets.
    for i in range(5):
        target = channel("c-allgemein") if i % 2 else thread("t-main")
        store.preferences.delete(conn, SAM, target)
        before = len(events(conn))
        pref = Preference(level="all")
        results = run_all(
            *[partial(store.preferences.put, connect(), SAM, target, pref) for _ in range(3)]
        )
        assert sorted(r.changed for r in results) == [False, False, True]
        assert len(events(conn)) == before + 1


def test_different_puts_give_version_two_and_two_events(
    connect: Connect, conn: Conn, store: NotifyStore
) -> None:
    """Seed 000 TestNotificationPreference_Concurrent, second half: the stored level equals the
    payload of the event with the higher seq (last write wins per row)."""
    first, second = overlapped(
        connect,
        lambda c: store.preferences.put(c, ALEX, thread(T), Preference(level="mentions")),
        lambda c: store.preferences.put(c, ALEX, thread(T), Preference(level="mute")),
    )
    assert first.changed and second.changed
    assert pref_rows(conn) == [(ALEX, "thread", T, "mute", 2)]
    log = events(conn)
    assert len(log) == 2
    assert log[-1]["payload"]["preference"]["level"] == "mute"  # type: ignore[index]
    assert [e["payload"]["preference"]["version"] for e in log] == [1, 2]  # type: ignore[index]
    # Free-running rounds: whatever the order, the row equals the last event.
    for round_ in range(5):
        levels = ["all", "mentions"] if round_ % 2 else ["mentions", "all"]
        run_all(
            *[
                partial(
                    store.preferences.put,
                    connect(),
                    SAM,
                    channel("c-allgemein"),
                    Preference(level=lv),
                )
                for lv in levels
            ]
        )
        [(_u, _k, _i, stored, version)] = [r for r in pref_rows(conn) if r[0] == SAM]
        last = [e for e in events(conn) if e["audience"] == SAM][-1]
        assert last["payload"]["preference"] == {  # type: ignore[index]
            "target": {"kind": "channel", "id": "c-allgemein"},
            "level": stored,
            "version": version,
        }


def test_ten_parallel_creates_give_ten_events_the_last_listing_all(
    connect: Connect, conn: Conn, store: NotifyStore
) -> None:
    """Seed 000 TestQuietHours_ConcurrentCreates (note 9a: the per-person advisory lock)."""
    rule = QuietRule(weekdays=31, start_local="19:00", end_local="07:00")
    conns = [connect() for _ in range(10)]
    results = run_all(*[(lambda c=c: store.quiet_hours.create(c, ALEX, rule)) for c in conns])
    assert not [r for r in results if isinstance(r, Exception)]
    ids = sorted(r.id for r in results)
    assert [r.id for r in store.quiet_hours.list(conn, ALEX)] == ids
    log = events(conn)
    assert len(log) == 10
    assert [len(e["payload"]["rules"]) for e in log] == list(range(1, 11))  # type: ignore[index,arg-type]
    assert [r["id"] for r in log[-1]["payload"]["rules"]] == ids  # type: ignore[index,union-attr]


def test_parallel_creates_with_one_idempotency_key_store_one_rule(
    connect: Connect, conn: Conn, store: NotifyStore
) -> None:
    """Seed 000 note 9d under concurrency: one rule, one event; every call answers it."""
    rule = QuietRule(weekdays=31, start_local="19:00", end_local="07:00")
    results = run_all(
        *[
            partial(store.quiet_hours.create_idempotent, connect(), ALEX, rule, "retry-key")
            for _ in range(6)
        ]
    )
    assert not [r for r in results if isinstance(r, Exception)]
    assert sorted(r.changed for r in results) == [False] * 5 + [True]
    assert len({r.rule for r in results}) == 1
    assert store.quiet_hours.list(conn, ALEX) == [results[0].rule]
    assert len(events(conn)) == 1


def test_archive_racing_puts_leaves_no_row_on_the_archived_path(
    connect: Connect, conn: Conn, store: NotifyStore, host: ReferenceHost
) -> None:
    """Seed 000 TestArchive_RaceWithPut (notes 4a, 4c, 7c), 20 rounds: every put either
    committed before the archive (and its row was removed with an event) or saw it archived."""
    putter, archiver = connect(), connect()
    outcomes: set[str] = set()
    for i in range(20):
        chan, thr = f"c-race-{i:02d}", f"t-race-{i:02d}"
        host.add_channel(conn, chan, SUPPORT)
        host.add_thread(conn, thr, chan)
        target = thread(thr) if i % 2 else channel(chan)
        seq = last_seq(conn)
        put, gone = run_all(
            partial(store.preferences.put, putter, ALEX, target, Preference(level="mute")),
            partial(host.archive_channel, archiver, chan, store=store, actor=OWNER),
        )
        assert not isinstance(gone, Exception), gone
        assert [r for r in pref_rows(conn) if r[2] in (chan, thr)] == []
        new = events(conn, seq)
        if isinstance(put, Conflict):
            assert put.code == "target_archived" and gone == [] and new == []
            outcomes.add("conflict")
        else:
            assert isinstance(put, PutResult) and put.changed, put
            assert [p.target for p in gone] == [target]
            assert [e["payload"].get("deleted") for e in new] == [None, True]  # type: ignore[union-attr]
            outcomes.add("removed")
    assert outcomes  # which interleavings occurred depends on scheduling; both are correct


def test_archive_and_put_in_both_forced_orders(
    connect: Connect, conn: Conn, store: NotifyStore, host: ReferenceHost
) -> None:
    """Seed 000 note 4c: the FOR SHARE path lock makes the outcome exact in either order."""
    # The put holds the path: the archive waits, then removes the new row with an event.
    put, gone = overlapped(
        connect,
        lambda c: store.preferences.put(c, ALEX, thread(T), Preference(level="mute")),
        lambda c: host.archive_channel(c, "c-allgemein", store=store, actor=OWNER),
    )
    assert put.changed and [p.target for p in gone] == [thread(T)]
    # The archive holds the channel: the put waits, then sees it archived.
    host.add_channel(conn, "c-late", SUPPORT)
    gone, refused = overlapped(
        connect,
        lambda c: host.archive_channel(c, "c-late", store=store, actor=OWNER),
        lambda c: _catch(
            lambda: store.preferences.put(c, ALEX, channel("c-late"), Preference(level="all"))
        ),
    )
    assert gone == [] and isinstance(refused, Conflict)
    assert pref_rows(conn) == []


def _catch(job: Callable[[], Any]) -> Any:
    try:
        return job()
    except Exception as exc:
        return exc
